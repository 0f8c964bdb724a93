"""The W4A16 register decode kernel with x staged in shared memory (csrc/w4a16_gemv.cuh XS, reached
as the 6th element of ``cuda_gemv(config=...)``) on a GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (the canonical formula, not
the packed layout) on fresh random data: every staged-x code (``w4a16_reg_xs_configs``) x its pipes
(pipe 0 codes also dealt round-robin, pipe 2) x warp counts x bf16 / fp16 x symmetric / asymmetric
zeros x group 128 / 384 / per channel (K % 128 != 0: the staged copy's zero tail and the tail step)
x M in {1, 3, 8}; bit-equality with the same config reading x from global memory (the staged copy
changes where the fragments come from, not the arithmetic); strided x rows; PDL on / off and a CUDA
graph replay; the three issue shapes; the refusals (fold, M > 8, codes not compiled, xs 2, ring
codes, shared memory past the device's limit) and the automatic table's size cap.
"""

import pytest
import torch

from _w4a16_gpu_data import assert_matches
from _w4a16_gpu_data import layer as _layer
from qlinear.ops import w4a16 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"


def _lib():
    from qlinear.kernels import cuda_ext

    return cuda_ext.load()


def _x(m, k, dtype, seed):
    gen = torch.Generator(device=DEV).manual_seed(3000 + seed)
    return torch.randn(m, k, device=DEV, generator=gen).to(dtype)


def _configs():
    """(R, U, pipe) of every staged-x code, pipe 0 codes also as pipe 2."""
    out = []
    for code in _lib().w4a16_reg_xs_configs():
        r, u, nt, pf = code // 1000, code // 100 % 10, code // 10 % 10, code % 10
        assert nt == 1, code
        out += [(r, u, 1)] if pf else [(r, u, 0), (r, u, 2)]
    return out


def test_xs_codes_listed():
    lib = _lib()
    xs = set(lib.w4a16_reg_xs_configs())
    assert xs and 1210 in xs and 1211 in xs
    assert all(c // 10 % 10 == 1 for c in xs)  # M <= 8 only


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_xs_every_code(dtype):
    lib = _lib()
    reg = set(lib.w4a16_reg_configs())
    cases = [  # (n, k, group, asym, scale dtype)
        (1000, 384, 128, True, None),
        (300, 1540, -1, True, torch.float32),  # K % 128 != 0: zero tail of the staged copy
        (130, 1536, 384, False, torch.float16),
        (77, 2308, -1, False, None),
    ]
    for n, k, group, asym, sdt in cases:
        sdt = sdt or (torch.float16 if dtype == torch.float16 else torch.bfloat16)
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k)
        for r, u, pipe in _configs():
            for warps in (1, 3, 8):
                for m in (1, 3, 8):
                    x = _x(m, k, dtype, seed=m + 10 * warps)
                    b = torch.randn(n, device=DEV).to(dtype) if m % 2 else None
                    cfg = (r, u, warps, pipe)
                    y = ops.cuda_gemv(x, packed, b, cfg + (0, 1))
                    assert_matches(y, x, w, b, f"M={m} N={n} K={k} config={cfg} xs {dtype}")
                    if r * 1000 + u * 100 + 10 + (pipe == 1) in reg:
                        y0 = ops.cuda_gemv(x, packed, b, cfg)
                        assert torch.equal(y, y0), f"xs 1 vs 0 differ: M={m} N={n} K={k} config={cfg}"


def test_xs_strided_rows():
    packed, w = _layer(640, 1100, -1, True, seed=4)
    base = torch.randn(8, 1100 + 36, device=DEV).to(torch.bfloat16)
    for m in (1, 2, 8):
        x = base[:m, 8 : 8 + 1100]  # row stride 1136 elements, 16-byte offset
        assert x.stride(0) == 1136 and (m == 1 or not x.is_contiguous())
        for cfg in ((1, 2, 4, 0, 0, 1), (1, 2, 4, 1, 0, 1), (4, 1, 4, 2, 0, 1)):
            assert_matches(ops.cuda_gemv(x, packed, None, cfg), x, w, None, f"strided M={m} config={cfg}")


def test_xs_pdl_and_graph():
    packed, w = _layer(7168, 2048, 128, True, seed=9)
    x = _x(1, 2048, torch.bfloat16, seed=1)
    cfg = (1, 2, 4, 1, 0, 1)
    y0 = ops.cuda_gemv(x, packed, None, cfg, pdl=True)
    y1 = ops.cuda_gemv(x, packed, None, cfg, pdl=False)
    assert torch.equal(y0, y1)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.cuda_gemv(x, packed, None, cfg, pdl=True)
    for seed in (2, 3):
        x.copy_(_x(1, 2048, torch.bfloat16, seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        assert_matches(y, x, w, None, f"graph replay seed {seed}")


@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)])
def test_xs_big_shapes(shape):
    packed, w = _layer(*shape, 128, False, torch.float16, seed=shape[0])
    for m in (1, 4):
        x = _x(m, shape[1], torch.bfloat16, seed=m)
        for cfg in ((1, 2, 4, 1), (1, 2, 16, 2), (4, 1, 4, 2)):
            assert_matches(ops.cuda_gemv(x, packed, None, cfg + (0, 1)), x, w, None, f"{shape} M={m} {cfg}")


def test_xs_refusals():
    lib = _lib()
    packed, _ = _layer(64, 1024, 128, True)
    x1, x9 = _x(1, 1024, torch.bfloat16, 0), _x(9, 1024, torch.bfloat16, 0)

    def why(x, cfg, ring=-1, p=packed, group=128):
        r, u, w, pipe, fold, xs = cfg
        return lib.w4a16_gemv_supported(x, p.qweight, p.scales, p.zeros, group, r, u, w, ring, pipe, fold, xs)

    assert why(x1, (1, 2, 4, 0, 0, 1)) == 0
    assert why(x1, (1, 2, 4, 0, 1, 1)) == 6  # with the fold
    assert why(x9, (1, 2, 4, 0, 0, 1)) == 6  # M > 8
    assert why(x1, (1, 2, 4, 0, 0, 2)) == 6  # xs must be 0 / 1
    assert why(x1, (2, 2, 4, 0, 0, 1)) == 6  # R2 U2: not compiled with xs
    assert why(x1, (1, 2, 4, 0, 0, 1), ring=4124) == 6  # ring kernels stage x their own way
    sub, _ = _layer(64, 1024, 64, True)
    assert why(x1, (1, 2, 4, 0, 0, 1), p=sub, group=64) == 6  # groups < 128: the sub-group kernel
    # 8 staged rows of K = 2^16: 1 MB, past every device's per-CTA limit
    big, _ = _layer(16, 1 << 16, 128, True)
    x8 = _x(8, 1 << 16, torch.bfloat16, 0)
    assert why(x8, (1, 2, 4, 0, 0, 1), p=big) == 10
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x8, big, None, (1, 2, 4, 0, 0, 1))
    # xs with ring = 0 (automatic) selects the register kernel: the launch returns -warps
    out = torch.empty(1, 64, device=DEV, dtype=torch.bfloat16)
    used = lib.w4a16_gemv(out, x1, packed.qweight, packed.scales, packed.zeros, None, 128, 1, 2, 4, 0, 0, 0, 0, 1)
    assert used == -4


def test_xs_auto_cap(monkeypatch):
    """A table entry's xs applies only within _XS_AUTO_MAX_BYTES; past it the same config runs
    without it (and still matches the reference)."""
    packed, w = _layer(7168, 16384, 128, False, torch.float16, seed=11)
    monkeypatch.setitem(ops._CUDA_REG_AUTO, ("many", 0), (1, 2, 4, 1, 0, 1))
    monkeypatch.setitem(ops._CUDA_REG_AUTO, ("many", 4), (1, 2, 4, 1, 0, 1))
    monkeypatch.setitem(ops._CUDA_RING_AUTO, ("many", 0), -1)
    monkeypatch.setitem(ops._CUDA_RING_AUTO, ("many", 4), -1)
    for m in (1, 4):
        x = _x(m, 16384, torch.bfloat16, seed=m)
        fits = ops.xs_smem_bytes(m, 16384, 1, 4) <= ops._XS_AUTO_MAX_BYTES
        cfg = ops._cuda_auto_reg(x, packed)
        assert cfg == ((1, 2, 4, 1, 0, 1) if fits else (1, 2, 4, 1, 0)), (m, cfg)
        assert_matches(ops.w4a16_linear(x, packed, backend="cuda"), x, w, None, f"auto M={m}")
