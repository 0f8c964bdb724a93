"""The CUDA FP8 block decode GEMV (backend "cuda" of qlinear.ops.fp8_block_linear, csrc/fp8_gemv.cuh)
on a GPU: M in 1..4 x the DeepSeek-V3 shapes and ragged ones x bf16 / fp16 x bias, both with the
activation quantization fused into the kernel and with pre-quantized activations, against the fp32
GEMM of the same quantized operands; the dispatch; a misaligned weight view (falls back to Triton);
CUDA-graph capture.
"""

import pytest
import torch

from qlinear._utils import FP8_E4M3, cdiv
from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MS = [1, 2, 3, 4]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K)
# ragged N (not a multiple of 16 or 128), K with a short last group, K not a multiple of 64
RAGGED = [(576, 1472), (200, 320), (1000, 1488), (37, 64)]
DTYPES = [torch.bfloat16, torch.float16]
DEV = "cuda"

_W: dict = {}


def _ext():
    from qlinear.kernels import cuda_ext

    return cuda_ext.load()  # a build failure fails the test: this file is about the extension


def _weight(N: int, K: int):
    if (N, K) not in _W:
        g = torch.Generator(device=DEV).manual_seed(N * 7 + K)
        w = (torch.randn(N, K, device=DEV, generator=g) * 60).to(FP8_E4M3)
        s = torch.rand(cdiv(N, 128), cdiv(K, 128), device=DEV, generator=g) * 1e-3 + 1e-4
        _W[(N, K)] = (w, s, ref.dequant_fp8_block_ref(w, s, (128, 128)))
    return _W[(N, K)]


def _x(M, K, dtype, seed, row_stride=None):
    g = torch.Generator(device=DEV).manual_seed(seed)
    base = torch.randn(M, row_stride or K, device=DEV, generator=g) * 3
    return base.to(dtype)[:, :K]


def _want(x, N, K, bias):
    _, _, wd = _weight(N, K)
    q, s = ref.per_token_group_quant_fp8_ref(x, 128)
    out = ref.dequant_fp8_group_ref(q, s, 128) @ wd.t()
    return out + bias.float() if bias is not None else out


def _rel(out, want):
    return ((out.float() - want).norm() / want.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "prequant"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES + RAGGED, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("M", MS)
def test_gemv_direct(M, shape, dtype, bias, fused):
    N, K = shape
    w, s, _ = _weight(N, K)
    x = _x(M, K, dtype, seed=M * 100 + N, row_stride=K + 32 if fused else None)
    b = torch.randn(N, device=DEV).to(dtype) if bias else None
    out = torch.full((M, N), float("nan"), device=DEV, dtype=dtype)
    if fused:
        if M * K > 36 * 1024:
            pytest.skip("fused quantization needs M * K codes in 48 KiB of shared memory")
        _ext().fp8_block_gemv(out, x, None, w, s, b, 128, 128, ref.FP8_SCALE_EPS)
    else:
        q, sq = ref.per_token_group_quant_fp8_ref(x, 128)
        _ext().fp8_block_gemv(out, q, sq, w, s, b, 128, 128, ref.FP8_SCALE_EPS)
    err = _rel(out, _want(x, N, K, b))
    assert err <= 1e-2, f"rel err {err:.2e}"


@pytest.mark.parametrize("cfg", [(1, 1), (3, 2), (16, 1), (2, 8), (5, 3)])
def test_gemv_configs(cfg):
    # every (warps_k, tiles) gives the same sums: ragged shapes, odd counts
    N, K = 1000, 1488
    w, s, _ = _weight(N, K)
    x = _x(3, K, torch.bfloat16, seed=5)
    q, sq = ref.per_token_group_quant_fp8_ref(x, 128)
    out = torch.empty((3, N), device=DEV, dtype=torch.bfloat16)
    _ext().fp8_block_gemv(out, q, sq, w, s, None, 128, 128, ref.FP8_SCALE_EPS, cfg[0], cfg[1])
    assert _rel(out, _want(x, N, K, None)) <= 1e-2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES + RAGGED[:2], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("M", MS)
def test_op_dispatch_cuda(M, shape, dtype):
    N, K = shape
    w, s, _ = _weight(N, K)
    x = _x(M, K, dtype, seed=M + K)
    assert ops.fp8_block_backend(x, w, (128, 128), s) == "cuda"
    out = ops.fp8_block_linear(x, w, s)
    assert out.shape == (M, N) and out.dtype == dtype
    assert _rel(out, _want(x, N, K, None)) <= 1e-2


def test_dispatch_declines():
    w, s, _ = _weight(200, 320)
    assert ops.fp8_block_backend(_x(5, 320, torch.bfloat16, 1), w, (128, 128), s) != "cuda"  # M > 4
    assert ops.fp8_block_backend(_x(1, 320, torch.float32, 1), w, (128, 128), s) != "cuda"  # fp32 x
    w2 = (torch.randn(64, 1000, device=DEV) * 30).to(FP8_E4M3)
    s2 = torch.rand(1, 8, device=DEV) * 1e-3 + 1e-4
    x2 = _x(1, 1000, torch.bfloat16, 2)
    assert ops.fp8_block_backend(x2, w2, (128, 128), s2) != "cuda"  # K % 16 != 0
    with pytest.raises(ValueError, match="backend 'cuda'"):
        ops.fp8_block_linear(x2, w2, s2, backend="cuda")


def test_misaligned_weight_falls_back():
    N, K = 576, 1472
    w, s, _ = _weight(N, K)
    buf = torch.empty(N * K + 8, dtype=torch.uint8, device=DEV)
    wv = buf[8:].view(FP8_E4M3).view(N, K)  # data pointer 8 bytes off a 16-byte boundary
    wv.copy_(w)
    x = _x(2, K, torch.bfloat16, 3)
    out = ops.fp8_block_linear(x, wv, s, backend="cuda")
    assert _rel(out, _want(x, N, K, None)) <= 1e-2


@pytest.mark.parametrize("shape", [(2112, 7168), (7168, 16384)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_cuda_graph(shape):
    N, K = shape
    w, s, _ = _weight(N, K)
    x = _x(1, K, torch.bfloat16, 9)
    b = torch.randn(N, device=DEV).to(torch.bfloat16)
    ops.fp8_block_linear(x, w, s, bias=b)  # warm-up outside the capture (build, Triton compile)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = ops.fp8_block_linear(x, w, s, bias=b)
    x.copy_(_x(1, K, torch.bfloat16, 10))
    graph.replay()
    torch.cuda.synchronize()
    assert _rel(out, _want(x, N, K, b)) <= 1e-2
