"""The CUDA W4A16 / W8A16 decode GEMV (backend "cuda", csrc/w4a16_gemv.cuh) on a GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (the canonical formula,
independent of the packed layout and its decoder), on fresh random data: M in 1..8 x the three
DeepSeek-V3 shapes and small odd ones x symmetric / asymmetric / act-order with two shards of
different permutations x group 128 / 64 / 32 / per channel x bias; every launch variant the
benchmark sweeps; 8-bit; fp16 x with fp32 scales; CUDA-graph capture; dispatch; fallbacks.
"""

import pytest
import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
BIG = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K)
SMALL = [(77, 384), (300, 576), (5, 260), (1000, 128)]
TOL = 1e-2
# Launch variants (rows per team, lanes per team, threads per block) exercised by the benchmark.
VARIANTS = [(1, 8, 128), (1, 16, 128), (1, 32, 128), (2, 16, 128), (2, 32, 128), (4, 32, 128),
            (1, 64, 128), (1, 128, 128), (1, 256, 256), (2, 4, 64), (1, 32, 256)]

_CACHE: dict = {}


def _layer(n, k, scheme, group, bits=4, scale_dtype=torch.float32):
    key = (n, k, scheme, group, bits, scale_dtype)
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            _CACHE.clear()
            torch.cuda.empty_cache()
        gen = torch.Generator(device=DEV).manual_seed(n * 7 + k + group + bits)
        g = k if group == -1 else group
        num_groups = k // g
        q = torch.randint(0, 1 << bits, (n, k), device=DEV, generator=gen, dtype=torch.int32)
        zeros = None
        if scheme != "sym":
            zeros = torch.randint(0, 1 << bits, (n, num_groups), device=DEV, generator=gen, dtype=torch.int32)
        scales = (torch.rand(n, num_groups, device=DEV, generator=gen) * 0.02 + 1e-3).to(scale_dtype)
        g_idx = None
        if scheme == "act_order":
            cut = max(1, (n * 3) // 5)
            labels = torch.arange(k, device=DEV) // g
            g_idx = [(0, cut, labels[torch.randperm(k, device=DEV, generator=gen)]),
                     (cut, n, labels[torch.randperm(k, device=DEV, generator=gen)])]
        packed = ops.pack_w4a16(q, zeros, scales, group, bits=bits, g_idx=g_idx, scale_dtype=scale_dtype)
        if scheme == "act_order" and num_groups > 1:  # one group: every order is the identity
            assert packed.num_shards == 2 and packed.perm is not None
        w = ref.dequantize_canonical(q, zeros, scales.float(), group, g_idx, bits=bits)
        _CACHE[key] = (packed, w)
    return _CACHE[key]


def _x(m, k, dtype=torch.bfloat16, seed=0):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    return torch.randn(m, k, device=DEV, generator=gen).to(dtype)


def _check(packed, w, m, dtype=torch.bfloat16, with_bias=True, config=None, seed=0):
    x = _x(m, packed.k, dtype, seed=seed)
    bias = torch.randn(packed.n, device=DEV, dtype=dtype) if with_bias else None
    if config is None:
        y = ops.w4a16_linear(x, packed, bias, backend="cuda")
    else:
        y = ops.cuda_gemv(x, packed, bias, config=config)
    assert y is not None and y.dtype == dtype and y.shape == (m, packed.n)
    want = x.float() @ w.T
    if bias is not None:
        want = want + bias.float()
    err = ((y.float() - want).norm() / want.norm()).item()
    assert err <= TOL, f"rel err {err:.3e} (M={m}, N={packed.n}, K={packed.k}, config={config})"


@pytest.mark.parametrize("scheme", ["asym", "sym", "act_order"])
@pytest.mark.parametrize("shape", BIG)
def test_big_shapes(shape, scheme):
    packed, w = _layer(*shape, scheme, 128, scale_dtype=torch.bfloat16)
    for m in (1, 2, 3, 4, 8):
        _check(packed, w, m, with_bias=m % 2 == 1, seed=m)


@pytest.mark.parametrize("group", [64, 32, -1, 256])
def test_groups_big(group):
    packed, w = _layer(2112, 7168, "asym", group, scale_dtype=torch.bfloat16)
    for m in (1, 4):
        _check(packed, w, m, seed=m)


@pytest.mark.parametrize("group", [128, 64, 32, 16, -1])
@pytest.mark.parametrize("scheme", ["asym", "sym", "act_order"])
@pytest.mark.parametrize("shape", SMALL)
def test_small_odd_shapes(shape, scheme, group):
    n, k = shape
    if group != -1 and k % group:
        pytest.skip("group does not divide K")
    packed, w = _layer(n, k, scheme, group)
    for m in range(1, 9):
        _check(packed, w, m, dtype=torch.float16 if m % 3 == 0 else torch.bfloat16, with_bias=m % 2 == 0, seed=m)


@pytest.mark.parametrize("group", [128, 32, -1])
def test_w8a16(group):
    for shape, scheme in (((2112, 7168), "asym"), ((300, 576), "act_order"), ((77, 384), "sym")):
        if group != -1 and shape[1] % group:
            continue
        packed, w = _layer(*shape, scheme, group, bits=8)
        for m in (1, 2, 3, 4):
            _check(packed, w, m, seed=m)


@pytest.mark.parametrize("variant", VARIANTS)
def test_launch_variants(variant):
    r, t, b = variant
    for shape, scheme in (((2112, 7168), "act_order"), ((24576, 1536), "asym"), ((77, 384), "sym")):
        packed, w = _layer(*shape, scheme, 128, scale_dtype=torch.bfloat16)
        for m in (1, 2, 4):
            if r * m > 8 or (r == 4 and m > 2):
                continue
            _check(packed, w, m, config=variant, seed=m)


def test_cuda_graph_capture():
    packed, w = _layer(2112, 7168, "act_order", 128, scale_dtype=torch.bfloat16)
    x = _x(2, 7168)
    bias = torch.randn(2112, device=DEV, dtype=torch.bfloat16)
    ops.w4a16_linear(x, packed, bias, backend="cuda")  # build / warm up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.w4a16_linear(x, packed, bias, backend="cuda")
    x.copy_(_x(2, 7168, seed=11))
    graph.replay()
    torch.cuda.synchronize()
    want = x.float() @ w.T + bias.float()
    assert ((y.float() - want).norm() / want.norm()).item() <= TOL


def test_dispatch_and_fallbacks():
    packed, w = _layer(2112, 7168, "asym", 128, scale_dtype=torch.bfloat16)
    assert ops.w4a16_backend(_x(1, 7168), packed) == "cuda"
    assert ops.w4a16_backend(_x(ops._CUDA_MAX_M, 7168), packed) == "cuda"
    assert ops.w4a16_backend(_x(16, 7168), packed) != "cuda"
    # a misaligned x (2-byte offset) runs, through the Triton GEMV
    base = _x(1, 7168 + 1)
    x = base[:, 1:]
    assert x.data_ptr() % 8 != 0
    y = ops.w4a16_linear(x, packed, backend="cuda")
    want = x.float() @ w.T
    assert ((y.float() - want).norm() / want.norm()).item() <= TOL
    # 3-D input through the auto choice
    x3 = _x(4, 7168).view(2, 2, 7168)
    y3 = ops.w4a16_linear(x3, packed)
    assert y3.shape == (2, 2, 2112)
    want3 = x3.reshape(4, -1).float() @ w.T
    assert ((y3.reshape(4, -1).float() - want3).norm() / want3.norm()).item() <= TOL
    # an explicit "cuda" on a case it does not take is refused with the reason
    with pytest.raises(ValueError, match="cuda"):
        ops.w4a16_linear(_x(9, 7168), packed, backend="cuda")
