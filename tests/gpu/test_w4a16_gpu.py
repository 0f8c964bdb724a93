"""W4A16 / W8A16 on a CUDA GPU (H200 target): M in {1, 2, 4, 16, 64, 128, 1024, 4096} x the
DeepSeek-V3 shapes x symmetric / asymmetric / act-order (merged shards with different g_idx),
every backend, against ``x @ W.T`` in fp32 with W from ``dequantize_canonical``; plus W8A16,
odd N, CUDA-graph capture of the split-K kernels, and torch.compile through the custom op.
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
MS = [1, 2, 4, 16, 64, 128, 1024, 4096]
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384)]  # (N, K)
SCHEMES = ["sym", "asym", "act_order"]
BACKENDS = ["auto", "triton", "dequant_cublas"]
# Row ranges of the merged layers used for act-order (each with its own g_idx).
SHARDS = {(2112, 7168): [0, 1536, 2112], (24576, 1536): [0, 8192, 16384, 24576], (7168, 16384): [0, 3584, 7168]}

_CACHE: dict = {}


def _canonical(n, k, group, bits, scheme, seed):
    g = torch.Generator(device=DEV).manual_seed(seed)
    num_groups = k // group
    q = torch.randint(0, 1 << bits, (n, k), device=DEV, generator=g, dtype=torch.int32).to(torch.uint8)
    zeros = None
    if scheme != "sym":
        zeros = torch.randint(0, 1 << bits, (n, num_groups), device=DEV, generator=g, dtype=torch.int32)
    scales = torch.rand(n, num_groups, device=DEV, generator=g) * 0.02 + 1e-3
    g_idx = None
    if scheme == "act_order":
        bounds = SHARDS.get((n, k), [0, n // 2, n])
        labels = torch.arange(k, device=DEV) // group
        g_idx = [(r0, r1, labels[torch.randperm(k, device=DEV, generator=g)])
                 for r0, r1 in zip(bounds[:-1], bounds[1:])]
    return q, zeros, scales, group, g_idx


def _layer(n, k, scheme, bits=4, group=128):
    key = (n, k, scheme, bits, group)
    if key not in _CACHE:
        if len(_CACHE) >= 6:  # the big shapes cost ~1 GB of fp32 reference each
            _CACHE.clear()
            torch.cuda.empty_cache()
        q, z, s, g, g_idx = _canonical(n, k, group, bits, scheme, seed=n + k + bits)
        packed = ops.pack_w4a16(q, z, s, g, bits=bits, g_idx=g_idx)
        w = ref.dequantize_canonical(q, z, s, g, g_idx, bits=bits)
        _CACHE[key] = (packed, w)
    return _CACHE[key]


def _x(m, k, dtype, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return torch.randn(m, k, device=DEV, generator=g).to(dtype)


def _rel(y, want):
    return ((y.float() - want).norm() / want.norm()).item()


# Outermost decorator varies fastest: one weight layer is built per (shape, scheme).
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("shape", SHAPES)
def test_w4a16_matches_fp32_reference(shape, scheme, M, backend):
    if backend == "dequant_cublas" and M < 64:
        pytest.skip("the dequantize + cuBLAS path is for large M")
    n, k = shape
    packed, w = _layer(n, k, scheme)
    x = _x(M, k, torch.bfloat16, seed=M)
    bias = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    y = ops.w4a16_linear(x, packed, bias, backend=None if backend == "auto" else backend)
    assert y.shape == (M, n) and y.dtype == torch.bfloat16
    want = x.float() @ w.T + bias.float()
    assert _rel(y, want) <= 1e-2


W8_MS = [1, 16, 128, 1024]


@pytest.mark.parametrize("M", W8_MS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_w8a16_and_odd_shapes(scheme, M):
    for n, k, group in [(2112, 7168, 128), (1536 + 576, 1536, 64), (576, 7168, 32)]:
        for bits in (8, 4):
            packed, w = _layer(n, k, scheme, bits=bits, group=group)
            x = _x(M, k, torch.float16, seed=M + bits)
            y = ops.w4a16_linear(x, packed)
            assert _rel(y, x.float() @ w.T) <= 1e-2, (n, k, group, bits)


def test_per_channel():
    n, k = 2112, 7168
    q, z, s, _, _ = _canonical(n, k, k, 4, "asym", seed=1)
    packed = ops.pack_w4a16(q, z, s, -1)
    w = ref.dequantize_canonical(q, z, s, -1)
    for m in (1, 16, 1024):
        x = _x(m, k, torch.bfloat16, seed=m)
        assert _rel(ops.w4a16_linear(x, packed), x.float() @ w.T) <= 1e-2


@pytest.mark.parametrize("M", [1, 4, 16, 64])
@pytest.mark.parametrize("scheme", ["asym", "act_order"])
def test_cuda_graph_capture_split_k(M, scheme):
    """The split-K counters must be reset by the kernels: replay the graph several times."""
    n, k = 2112, 7168
    packed, w = _layer(n, k, scheme)
    x = _x(M, k, torch.bfloat16, seed=3)
    y = ops.w4a16_linear(x, packed, backend="triton")  # warm-up / compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.w4a16_linear(x, packed, backend="triton")
    want = x.float() @ w.T
    for seed in range(3):
        x.copy_(_x(M, k, torch.bfloat16, seed=seed + 10))
        want = x.float() @ w.T
        graph.replay()
        torch.cuda.synchronize()
        assert _rel(y, want) <= 1e-2


def test_torch_compile():
    n, k = 2112, 7168
    packed, w = _layer(n, k, "asym")
    x = _x(4, k, torch.bfloat16, seed=5)
    fn = torch.compile(lambda t: ops.w4a16_linear(t, packed), fullgraph=True)
    assert _rel(fn(x), x.float() @ w.T) <= 1e-2


def test_backend_choice_and_3d_input():
    packed, w = _layer(2112, 7168, "sym")
    x = _x(6, 7168, torch.bfloat16).view(2, 3, 7168)
    assert ops.w4a16_backend(x, packed) == "cuda"  # M <= _CUDA_MAX_M
    assert ops.w4a16_backend(_x(32, 7168, torch.bfloat16), packed) == "triton"
    assert ops.w4a16_backend(x.float(), packed) == "reference"
    assert ops.w4a16_backend(_x(4096, 7168, torch.bfloat16), packed) == "dequant_cublas"
    x128 = _x(128, 7168, torch.bfloat16, seed=3)
    # M = 128 on this shape class: the wgmma GEMM where the GPU runs its sm_90a code (_CUDA_WGMMA_M)
    assert ops.w4a16_backend(x128, packed) == ("cuda_wgmma" if ops._wgmma_built(x128.device) else "triton_wg")
    assert _rel(ops.w4a16_linear(x128, packed), x128.float() @ w.T) <= 1e-2
    y = ops.w4a16_linear(x, packed)
    assert y.shape == (2, 3, 2112)
    assert _rel(y.view(6, -1), x.view(6, -1).float() @ w.T) <= 1e-2


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_dequantize_versions_exact(scheme, version):
    from qlinear.kernels import w4a16_triton as wt

    packed, _ = _layer(2112, 7168, scheme)
    wd = wt.w4a16_dequantize(packed, torch.float32, version=version)
    want = ref.dequantize_w4a16(packed)
    if packed.perm is None:
        assert torch.equal(wd, want)
    else:  # kernel output is in packed (per-shard sorted) column order
        for s in range(packed.num_shards):
            r0, r1 = packed.shard_rows[s], packed.shard_rows[s + 1]
            assert torch.equal(wd[r0:r1], want[r0:r1, packed.perm[s].long()])
