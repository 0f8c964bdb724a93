"""The FP8 block-scaled decode GEMM with x quantized once per thread-block cluster into shared memory
(T = 2 codes, csrc/fp8_sx.cuh) on an H200.

Against ``qlinear.reference.fp8.fp8_block_linear_ref`` on fresh random data: clusters of 1 / 2 / 4 / 8,
PF 1 / 2, with and without the L2 prefetch, M in {1, 2, 5, 8, 9, 12, 16} on ragged N (200, 520: the last
tile and the tiles a cluster rounds the grid up to lie past N), an MLA shape, bias and bf16 / fp16 output.
The codes and scales are quant_raw's, the warps' k-blocks and summation order the register kernel's: with
the same warps and PF its in-kernel-quantization code (Q = 0) must give the same output bit for bit.
Also CUDA-graph replays and the refusals.
"""

import pytest
import torch

from _fp8_gpu_data import check as _check
from _fp8_gpu_data import weight as _weight
from qlinear.ops import fp8 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
# T = 2, X = L2 prefetch, Q = 0, S = cluster size, R = 1, PF, W (csrc/fp8_gemv_launch.h)
SX_CODES = [200021116, 210021116, 200041116, 200081112, 200011116, 200021216, 210041212, 200021104]


def _ext():
    from qlinear.kernels import cuda_ext

    if not cuda_ext.is_available():
        pytest.skip(f"CUDA extension unavailable: {cuda_ext.failure_reason()}")
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the cluster-quantized kernel is built for sm_90")
    return cuda_ext.load()


def _x(m, k, dtype, seed):
    gen = torch.Generator(device=DEV).manual_seed(3000 + seed)
    x = torch.randn(m, k, device=DEV, generator=gen) * 3
    x[:, ::37] *= 50  # uneven group maxima
    return x.to(dtype)


def _register_code(code):
    """The register kernel's Q = 0 code with the same PF and warps (one split, one row tile)."""
    pf, w = (code // 100) % 10, code % 100
    return 10000 + 1000 + pf * 100 + w


@pytest.mark.parametrize("code", SX_CODES)
def test_sx_codes(code):
    C = _ext()
    ws = ops._cuda_workspace(torch.device(DEV))
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
            reg = _register_code(code)
            if C.fp8_block_gemv_supported(x, w, wsi, ws, reg) == 0:
                y0 = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=reg)
                assert y0 is not None
                assert torch.equal(y, y0), f"differs from the register kernel {reg} ({what})"


def test_sx_matches_quantizer_path():
    """Same codes and scales as per_token_group_quant_fp8: the pre-quantized register kernel with the
    same warps gives the same output bit for bit."""
    _ext()
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    for m in (3, 16):
        x = _x(m, k, torch.bfloat16, 40 + m)
        y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=200021116)
        y0 = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=1011116)
        assert y is not None and y0 is not None
        assert torch.equal(y, y0), f"M={m}"


def test_sx_graph_replay():
    _ext()
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    x = _x(16, k, torch.bfloat16, 7)
    code = 210021116
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


def test_sx_refusals():
    C = _ext()
    n, k = 256, 1024
    w, wsi = _weight(n, k)
    x = _x(12, k, torch.bfloat16, 3)
    q, s = ops.per_token_group_quant_fp8(x, 128)
    ws = ops._cuda_workspace(x.device)
    assert C.fp8_block_gemv_supported(x, w, wsi, ws, 200021116) == 0
    # pre-quantized x (Q = 1 or not); a cluster of 3; two row tiles; PF 0 / 3; 17 warps; X = 2; T = 3
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 201021116, s) == 5
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 200021116, s) == 5
    for code in (200031116, 200022116, 200021016, 200021316, 200021117, 220021116, 300021116):
        assert C.fp8_block_gemv_supported(x, w, wsi, ws, code) == 5, code
    # K = 16384 at two token tiles: 16 x 16448 bytes of codes do not fit a CTA's shared memory; one tile fits
    wb, wsib = _weight(256, 16384)
    assert C.fp8_block_gemv_supported(_x(16, 16384, torch.bfloat16, 5), wb, wsib, ws, 200021116) == 5
    assert C.fp8_block_gemv_supported(_x(8, 16384, torch.bfloat16, 6), wb, wsib, ws, 200021116) == 0
    assert ops.fp8_block_gemv_cuda(_x(16, 16384, torch.bfloat16, 5), wb, wsib, None, config=200021116) is None
