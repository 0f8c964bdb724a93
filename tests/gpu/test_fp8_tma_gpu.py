"""The FP8 block-scaled decode GEMM fed by a TMA ring (T = 1 codes, csrc/fp8_tma.cuh) on an H200.

Against ``qlinear.reference.fp8.fp8_block_linear_ref`` (per-token-group quantization, then an fp32 GEMM of
the dequantized operands) on fresh random data: every compiled shape key at M in {1, 2, 5, 8, 9, 12, 16}
on ragged N (200, 520: last tiles past N), an MLA shape, bias and bf16 / fp16 output; close to the register kernel's pre-quantized path (same
codes and scales, another summation order); CUDA-graph replays; the refusals (key not compiled, scale
rows the tensor maps cannot describe).
"""

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from _fp8_gpu_data import check as _check
from _fp8_gpu_data import weight as _weight
from qlinear.ops import fp8 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
# T = 1, Q = 1, then S = KS, R, PF = ST, W = CW (csrc/fp8_gemv_launch.h); keys in fp8_tma.cuh kTmaKeys
TMA_CODES = [101042304, 101042404, 101044404, 101044504, 101041404, 101041402,
             111041402]  # X = 1: the dependent grid triggered at the start


def _ext():
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the TMA ring kernel is built for sm_90")
    return cuda_ext_ops()


def _x(m, k, dtype, seed):
    gen = torch.Generator(device=DEV).manual_seed(2000 + seed)
    x = torch.randn(m, k, device=DEV, generator=gen) * 3
    x[:, ::37] *= 50  # uneven group maxima
    return x.to(dtype)


@pytest.mark.parametrize("code", TMA_CODES)
def test_tma_codes(code):
    _ext()
    for n, k in [(200, 1024), (520, 1536), (2112, 7168)]:
        w, wsi = _weight(n, k)
        for m in (1, 2, 5, 8, 9, 12, 16):
            dtype = torch.bfloat16 if m % 2 else torch.float16
            x = _x(m, k, dtype, m + n)
            b = torch.randn(n, device=DEV).to(dtype) if m % 3 else None
            what = f"M={m} {n}x{k} {dtype} config={code}"
            y = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code)
            assert y is not None, f"refused: {what}"
            _check(y, x, w, wsi, b, what)
            # the register kernel on the same pre-quantized operands: only the fp32 summation order differs
            y0 = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=1011104)
            assert y0 is not None
            d = ((y.float() - y0.float()).norm() / y0.float().norm()).item()
            assert d <= 2e-3, f"TMA ring vs register kernel rel diff {d:.2e} ({what})"


def test_tma_wide_shape():
    _ext()
    n, k = 7168, 16384
    w, wsi = _weight(n, k)
    for m in (1, 16):
        x = _x(m, k, torch.bfloat16, m)
        y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=101042404)
        assert y is not None
        _check(y, x, w, wsi, None, f"M={m} {n}x{k}")


def test_tma_graph_replay():
    _ext()
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    x = _x(16, k, torch.bfloat16, 7)
    code = 101041404
    eager = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)
    torch.cuda.current_stream().wait_stream(s)
    g.replay()
    first = y.clone()
    x.copy_(_x(16, k, torch.bfloat16, 8))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(first, eager)
    _check(y, x, w, wsi, None, "graph replay on new x")


def test_tma_refusals():
    C = _ext()
    n, k = 256, 1024
    w, wsi = _weight(n, k)
    x = _x(4, k, torch.bfloat16, 3)
    q, s = ops.per_token_group_quant_fp8(x, 128)
    ws = ops._cuda_workspace(x.device)
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 101042404, s) == 0
    # shape keys that are not compiled (KS = 3; CW = 2 at R = 2), T = 1 without pre-quantized x, a T digit above 1
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 101032404, s) == 5
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 101042402, s) == 5
    assert C.fp8_block_gemv_supported(x, w, wsi, ws, 101042404) == 5
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 201042404, s) == 5
    # weight scales whose rows are not contiguous (column-major storage): the map cannot describe them
    wsi_cm = wsi.t().contiguous().t()
    assert C.fp8_block_gemv_supported(q, w, wsi_cm, ws, 101042404, s) == 4
    assert ops.fp8_block_gemv_cuda(x, w, wsi_cm, None, config=101042404) is None
    # the register kernel still takes them
    assert C.fp8_block_gemv_supported(q, w, wsi_cm, ws, 1011104, s) == 0
    # K = 640: 5 scales per row, 20 bytes, not a 16-byte multiple
    w5, wsi5 = _weight(256, 640)
    q5, s5 = ops.per_token_group_quant_fp8(_x(4, 640, torch.bfloat16, 4), 128)
    assert C.fp8_block_gemv_supported(q5, w5, wsi5, ws, 101042404, s5) == 4
    assert C.fp8_block_gemv_supported(q5, w5, wsi5, ws, 1011104, s5) == 0
