"""The superblock-K tensor-core W4A16 kernel (``kernel="mma_sb"``) on a CUDA GPU, against
``x @ W.T`` in fp32 with W from ``dequantize_canonical``, on fresh random data: bf16 (4-bit:
16-bit magic; 8-bit: the fp32 route) and fp16 activations, group sizes that take the
scale-after-dot path (128), the per-element path (32) and per-channel, act-order shards, and a
CUDA-graph replay of the split-K reduction. Few distinct configs: each is a Triton compile."""

import pytest
import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"


def _layer(n, k, group, bits, sym, seed, bounds=None):
    g = torch.Generator(device=DEV).manual_seed(seed)
    gs = k if group == -1 else group
    q = torch.randint(0, 1 << bits, (n, k), device=DEV, generator=g, dtype=torch.int32)
    z = None if sym else torch.randint(0, 1 << bits, (n, k // gs), device=DEV, generator=g, dtype=torch.int32)
    s = torch.rand(n, k // gs, device=DEV, generator=g) * 0.02 + 1e-3
    g_idx = None
    if bounds is not None:
        labels = torch.arange(k, device=DEV) // gs
        g_idx = [(r0, r1, labels[torch.randperm(k, device=DEV, generator=g)]) for r0, r1 in zip(bounds[:-1], bounds[1:])]
    packed = ops.pack_w4a16(q, z, s, group, bits=bits, g_idx=g_idx)
    return packed, ref.dequantize_canonical(q, z, s, group, g_idx, bits=bits)


def _rel(y, want):
    return ((y.float() - want).norm() / want.norm()).item()


# (bits, group, sym, dtype, scale_after, act_order, M, block_n, block_m)
CASES = [
    (4, 128, False, torch.bfloat16, True, False, 16, 64, 16),
    (4, 128, True, torch.bfloat16, True, False, 40, 64, 16),
    (4, 128, False, torch.bfloat16, False, False, 128, 128, 128),
    (4, 128, False, torch.float16, True, False, 16, 64, 16),
    (8, 128, False, torch.bfloat16, True, False, 16, 64, 16),
    (4, 32, False, torch.bfloat16, True, False, 64, 64, 64),
    (4, -1, False, torch.bfloat16, True, False, 16, 64, 16),
    (4, 128, False, torch.bfloat16, True, True, 16, 64, 16),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"b{c[0]}-g{c[1]}-{'sym' if c[2] else 'asym'}-"
                         f"{str(c[3])[6:]}-sa{int(c[4])}-{'ao' if c[5] else 'plain'}-M{c[6]}")
def test_mma_sb_matches_fp32_reference(case):
    from qlinear.kernels import w4a16_triton as wt

    bits, group, sym, dtype, scale_after, act_order, m, bn, bm = case
    n, k = 2112, 7168
    packed, w = _layer(n, k, group, bits, sym, seed=bits + group + m, bounds=[0, 1536, n] if act_order else None)
    x = torch.randn(m, k, device=DEV, generator=torch.Generator(device=DEV).manual_seed(m)).to(dtype)
    bias = torch.randn(n, device=DEV, dtype=dtype)
    cfg = wt.W4A16Config("mma_sb", block_n=bn, block_m=bm, num_warps=8 if bn * bm >= 128 * 128 else 4,
                         num_stages=3, scale_after=scale_after)
    assert wt.resolve_config(m, packed, cfg, x.device).split_k > 1  # the split-K reduction is exercised
    y = wt.w4a16_gemm(x, packed, bias, cfg)
    assert y.shape == (m, n) and y.dtype == dtype
    assert _rel(y, x.float() @ w.T + bias.float()) <= 1e-2
    assert int(wt._locks(x.device).abs().sum()) == 0


def test_mma_sb_cuda_graph_replay():
    from qlinear.kernels import w4a16_triton as wt

    n, k = 2112, 7168
    packed, w = _layer(n, k, 128, 4, False, seed=5)
    cfg = wt.W4A16Config("mma_sb", block_n=64, block_m=16, num_warps=4, num_stages=3)
    x = torch.randn(16, k, device=DEV, dtype=torch.bfloat16)
    y = wt.w4a16_gemm(x, packed, None, cfg)  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = wt.w4a16_gemm(x, packed, None, cfg)
    for seed in range(3):
        x.copy_(torch.randn(16, k, device=DEV, generator=torch.Generator(device=DEV).manual_seed(seed)).to(torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        assert _rel(y, x.float() @ w.T) <= 1e-2
