"""The "wg" W4A16 kernel (backend ``"triton_wg"``: dequantized tile as the register A operand of
a Hopper wgmma chain) on a CUDA GPU, against ``x @ W.T`` in fp32 with W from
``dequantize_canonical`` on fresh random data: the three DeepSeek-V3 shapes x M in {1, 16, 64,
128, 1024} through the public op (default configs, split-K auto), bf16 dequantization bit-exact
against the dequantize kernel, fp16 / 8-bit / small groups / act-order shards, and a CUDA-graph
replay of the split-K reduction."""

import pytest
import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]


def _layer(n, k, group, bits, sym, seed, bounds=None):
    g = torch.Generator(device=DEV).manual_seed(seed)
    gs = k if group == -1 else group
    q = torch.randint(0, 1 << bits, (n, k), device=DEV, generator=g, dtype=torch.int32)
    z = None if sym else torch.randint(0, 1 << bits, (n, k // gs), device=DEV, generator=g, dtype=torch.int32)
    s = (torch.rand(n, k // gs, device=DEV, generator=g) * 0.02 + 1e-3).to(torch.bfloat16).float()
    g_idx = None
    if bounds is not None:
        labels = torch.arange(k, device=DEV) // gs
        g_idx = [(r0, r1, labels[torch.randperm(k, device=DEV, generator=g)]) for r0, r1 in zip(bounds[:-1], bounds[1:])]
    packed = ops.pack_w4a16(q, z, s, group, bits=bits, g_idx=g_idx)
    return packed, ref.dequantize_canonical(q, z, s, group, g_idx, bits=bits)


def _rel(y, want):
    return ((y.float() - want).norm() / want.norm()).item()


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def layer(request):
    n, k = request.param
    return _layer(n, k, 128, 4, False, seed=n + k)


@pytest.mark.parametrize("m", [1, 16, 64, 128, 1024])
def test_wg_public_op_matches_fp32_reference(layer, m):
    from qlinear.kernels import w4a16_triton as wt

    packed, w = layer
    x = torch.randn(m, packed.k, device=DEV, generator=torch.Generator(device=DEV).manual_seed(m)).to(torch.bfloat16)
    bias = torch.randn(packed.n, device=DEV, dtype=torch.bfloat16)
    y = ops.w4a16_linear(x, packed, bias, backend="triton_wg")
    assert y.shape == (m, packed.n) and y.dtype == torch.bfloat16
    assert _rel(y, x.float() @ w.T + bias.float()) <= 1e-2
    assert int(wt._locks(x.device).abs().sum()) == 0


def test_wg_bf16_dequantization_bit_exact():
    # x = identity: y^T is the kernel's dequantized weight, equal to the dequantize kernel's
    from qlinear.kernels import w4a16_triton as wt

    packed, _ = _layer(256, 1024, 128, 4, False, seed=3)
    eye = torch.eye(1024, device=DEV, dtype=torch.bfloat16)
    cfg = wt.W4A16Config("wg", block_n=64, block_m=128, num_warps=4, num_stages=3)
    y = wt.w4a16_gemm(eye, packed, None, cfg)
    assert torch.equal(y.t(), wt.w4a16_dequantize(packed, torch.bfloat16))


# (bits, group, sym, dtype, act_order, M, block_n, block_m, warps)
CASES = [
    (4, 32, False, torch.bfloat16, False, 64, 64, 64, 4),
    (4, -1, True, torch.bfloat16, False, 128, 128, 128, 8),
    (4, 128, False, torch.float16, False, 128, 64, 128, 4),
    (8, 128, False, torch.bfloat16, False, 64, 64, 64, 4),
    (4, 128, False, torch.bfloat16, True, 100, 64, 128, 4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"b{c[0]}-g{c[1]}-{'sym' if c[2] else 'asym'}-"
                         f"{str(c[3])[6:]}-{'ao' if c[4] else 'plain'}-M{c[5]}")
def test_wg_variants_match_fp32_reference(case):
    from qlinear.kernels import w4a16_triton as wt

    bits, group, sym, dtype, act_order, m, bn, bm, warps = case
    n, k = 2112, 7168
    packed, w = _layer(n, k, group, bits, sym, seed=bits + group + m, bounds=[0, 1536, n] if act_order else None)
    x = torch.randn(m, k, device=DEV, generator=torch.Generator(device=DEV).manual_seed(m)).to(dtype)
    cfg = wt.W4A16Config("wg", block_n=bn, block_m=bm, num_warps=warps, num_stages=3)
    assert wt.resolve_config(m, packed, cfg, x.device).split_k > 1  # the split-K reduction is exercised
    y = wt.w4a16_gemm(x, packed, None, cfg)
    assert _rel(y, x.float() @ w.T) <= 1e-2
    assert int(wt._locks(x.device).abs().sum()) == 0


def test_wg_cuda_graph_replay():
    from qlinear.kernels import w4a16_triton as wt

    packed, w = _layer(2112, 7168, 128, 4, False, seed=5)
    x = torch.randn(128, 7168, device=DEV, dtype=torch.bfloat16)
    y = ops.w4a16_linear(x, packed, backend="triton_wg")  # compile outside the capture
    assert wt.resolve_config(128, packed, wt.wg_config(128), x.device).split_k > 1
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.w4a16_linear(x, packed, backend="triton_wg")
    for seed in range(3):
        x.copy_(torch.randn(128, 7168, device=DEV, generator=torch.Generator(device=DEV).manual_seed(seed)).to(torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        assert _rel(y, x.float() @ w.T) <= 1e-2
