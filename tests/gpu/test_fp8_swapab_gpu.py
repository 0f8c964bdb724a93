"""The swap-AB FP8 block GEMM on a CUDA GPU (issue 4, small M): the SWAP_AB_CONFIGS entries and
the swap-AB heuristic on the DeepSeek-V3 shapes at M in {1, 4, 16}, ragged shapes, bias, fp16,
CUDA-graph capture. Each output is compared with the fp32 GEMM of the same quantized operands
(quantized by the reference quantizer), and the fused-quantization output with the same kernel
fed per_token_group_quant_fp8's codes and scales: equal bits means the in-kernel quantization
produced exactly those codes and scales.
"""

import pytest
import torch

from qlinear._utils import FP8_E4M3, cdiv
from qlinear.reference import fp8 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (1536, 7168), (576, 7168)]
_W: dict = {}


def _kern():
    from qlinear.kernels import fp8_triton

    return fp8_triton


def _weight(N, K, bn=128, bk=128):
    key = (N, K, bn, bk)
    if key not in _W:
        g = torch.Generator(device=DEV).manual_seed(N * 7 + K)
        w = (torch.randn(N, K, device=DEV, generator=g) * 60).to(FP8_E4M3)
        s = torch.rand(cdiv(N, bn), cdiv(K, bk), device=DEV, generator=g) * 1e-3 + 1e-4
        _W[key] = (w, s)
    return _W[key]


def _x(M, K, dtype=torch.bfloat16, seed=0, strided=False):
    g = torch.Generator(device=DEV).manual_seed(seed)
    base = torch.randn(M, K + (48 if strided else 0), device=DEV, generator=g)
    base[:, ::29] *= 25  # groups of very different magnitude
    return base.to(dtype)[:, 16 : 16 + K] if strided else base.to(dtype)


def _rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def _check(x, w, ws, cfg, block=(128, 128), bias=None):
    kern = _kern()
    fused = kern.fp8_block_linear_triton(x, w, ws, block, bias, config=cfg, fuse_quant=True)
    q, s = kern.per_token_group_quant_fp8(x, block[1], column_major_scales=True)
    # the reference quantizer on the CPU: torch's CUDA fp32 -> e4m3 cast is not the RNE cast the
    # reference specifies on every input (tests/gpu/test_fp8_gpu.py compares on the CPU too)
    qr, sr = (t.to(x.device) for t in ref.per_token_group_quant_fp8_ref(x.cpu(), block[1]))
    assert torch.equal(q.view(torch.uint8), qr.view(torch.uint8)) and torch.equal(s, sr)
    plain = kern.fp8_block_gemm(q, s, w, ws, block, x.dtype, bias, config=cfg)
    want = ref.fp8_block_gemm_ref(qr, sr, w, ws, block, torch.float32, bias)
    assert fused.shape == want.shape and fused.dtype == x.dtype
    assert _rel(plain, want) < 1e-2, f"swap-AB GEMM rel err {_rel(plain, want)}"
    assert _rel(fused, want) < 1e-2, f"fused rel err {_rel(fused, want)}"
    assert torch.equal(fused, plain), (
        f"in-kernel quantization differs from per_token_group_quant_fp8 ({_rel(fused, plain):.2e})")


@pytest.mark.parametrize("M", [1, 4, 16])
@pytest.mark.parametrize("N,K", SHAPES)
def test_dispatched_swapab_config(N, K, M, monkeypatch):
    kern = _kern()
    monkeypatch.setenv("QLINEAR_FP8_SMALL_M", "swapab")
    cfg = kern.default_gemm_config(M, N, K)
    assert cfg.swap_ab
    w, ws = _weight(N, K)
    _check(_x(M, K, seed=M), w, ws, cfg)
    # the path the layers take (ops.fp8_block_linear, triton backend) dispatches to it too
    from qlinear.ops import fp8 as ops

    x = _x(M, K, seed=M + 1)
    out = ops.fp8_block_linear(x, w, ws, backend="triton")
    want = ops.fp8_block_linear(x, w, ws, backend="reference")
    assert _rel(out, want) < 1e-2


# (M, N, K, (bn, bk), config args: block_m, block_n, split, warps, stages, output dtype)
RAGGED = [
    (5, 1000, 1000, (128, 128), (16, 64, 3, 4, 4), torch.bfloat16),
    (3, 200, 320, (128, 128), (8, 128, 2, 4, 3), torch.float16),
    (20, 576, 1472, (128, 128), (16, 64, 4, 4, 6), torch.bfloat16),  # two token tiles
    (2, 130, 256, (64, 64), (16, 128, 1, 4, 4), torch.float16),  # BLOCK_N spans two scale blocks
    (16, 4096, 2048, (128, 128), (16, 256, 2, 8, 3), torch.bfloat16),
]


@pytest.mark.parametrize("case", RAGGED)
def test_ragged_bias_strided(case):
    kern = _kern()
    M, N, K, block, c, dtype = case
    cfg = kern.GemmConfig(*c, swap_ab=True, fuse_quant=True)
    w, ws = _weight(N, K, *block)
    bias = torch.randn(N, device=DEV).to(dtype)
    _check(_x(M, K, dtype, seed=N, strided=True), w, ws, cfg, block, bias)


def test_cuda_graph_split_k():
    kern = _kern()
    N, K, M = 2112, 7168, 4
    w, ws = _weight(N, K)
    cfg = kern.GemmConfig(16, 64, 8, 4, 4, swap_ab=True, fuse_quant=True)
    x = _x(M, K, seed=11)
    eager = kern.fp8_block_linear_triton(x, w, ws, config=cfg)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kern.fp8_block_linear_triton(x, w, ws, config=cfg)  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            outs = [kern.fp8_block_linear_triton(x, w, ws, config=cfg) for _ in range(3)]
    torch.cuda.current_stream().wait_stream(stream)
    x.copy_(_x(M, K, seed=12))  # new data in the captured input
    graph.replay()
    torch.cuda.synchronize()
    fresh = kern.fp8_block_linear_triton(x, w, ws, config=cfg)
    assert not torch.equal(fresh, eager)
    for o in outs:  # split-K counters left zeroed: every replayed launch reduces correctly
        assert torch.equal(o, fresh)


# k_unroll configs (block_m, block_n, split, warps, stages, swap_ab, k_unroll): even and odd K blocks
# per slice (an odd slice's last iteration reads a block past its end as zeros)
K_UNROLL = [
    (16, 128, 5, 4, 2, True, 2),   # 56 K blocks: slices of 12, 12, 12, 12, 8
    (16, 64, 3, 4, 2, False, 2),   # slices of 19, 19, 18
    (16, 64, 3, 4, 2, True, 4),
    (16, 64, 1, 4, 3, False, 4),   # one slice of 56
]


@pytest.mark.parametrize("c", K_UNROLL, ids=lambda c: f"{'swap' if c[5] else 'split'}-sk{c[2]}-ku{c[6]}")
@pytest.mark.parametrize("M", [1, 5, 16])
def test_k_unroll(c, M):
    """k_unroll > 1 against the fp32 GEMM of the same quantized operands, and bit for bit against
    the same config with k_unroll = 1 (the same dots summed in the same order)."""
    kern = _kern()
    N, K = 1536, 7168
    w, ws = _weight(N, K)
    bm, bn, split, warps, stages, swap, ku = c
    cfg = kern.GemmConfig(bm, bn, split, warps, stages, swap_ab=swap, k_unroll=ku)
    one = kern.GemmConfig(bm, bn, split, warps, stages, swap_ab=swap)
    x = _x(M, K, seed=M + 7 * ku)
    bias = torch.randn(N, device=DEV).to(torch.bfloat16) if M % 2 else None
    q, s = kern.per_token_group_quant_fp8(x, 128, column_major_scales=True)
    got = kern.fp8_block_gemm(q, s, w, ws, (128, 128), x.dtype, bias, config=cfg)
    base = kern.fp8_block_gemm(q, s, w, ws, (128, 128), x.dtype, bias, config=one)
    qr, sr = (t.to(x.device) for t in ref.per_token_group_quant_fp8_ref(x.cpu(), 128))
    want = ref.fp8_block_gemm_ref(qr, sr, w, ws, (128, 128), torch.float32, bias)
    assert _rel(got, want) < 1e-2, f"rel err {_rel(got, want)} ({cfg.short()})"
    assert torch.equal(got, base), f"k_unroll={ku} differs from k_unroll=1 ({cfg.short()}, {_rel(got, base):.2e})"
