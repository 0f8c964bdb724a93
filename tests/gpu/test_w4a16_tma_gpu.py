"""The W4A16 TMA ring decode kernel (csrc/w4a16_tma.cuh, ring codes >= 20000) on an sm_90 GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (independent of the packed
layout) on fresh random data: every compiled code x the three benchmark shapes x M in 1..16; sym /
asym x groups 128 / 256 / 384 / per channel x bf16 / fp16 x fp16 / bf16 scales; ragged N (partial CTAs) and
ragged K (superblocks past K, a partial last stage); strided x; PDL in a CUDA graph replayed on fresh
x; the refusals (kNoTma) and the dispatch table's fallback where the kernel does not apply.
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
K_NO_TMA = 11  # W4GemvSupport::kNoTma


@pytest.fixture(scope="module")
def lib():
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the TMA ring kernel needs sm_90")
    from qlinear.kernels import cuda_ext

    return cuda_ext.load()


def _codes(lib, nt):
    # 8xxxx: a diagnostic (1xxxxx / 2xxxxx: the code with swizzled x, two boxes / one 3-D box per superblock;
    # 1xxxxxx: the PDL trigger before the main loop at two token tiles)
    codes = [c for c in lib.w4a16_ring_configs(nt) if c >= 20000 and c % 100000 // 10000 != 8]
    assert codes, "no TMA ring codes compiled"
    return codes


def _check(packed, w, m, code, dtype=torch.bfloat16, bias=True, seed=0, x=None):
    gen = torch.Generator(device=DEV).manual_seed(3000 + seed)
    if x is None:
        x = torch.randn(m, packed.k, device=DEV, generator=gen).to(dtype)
    b = torch.randn(packed.n, device=DEV, generator=gen).to(x.dtype) if bias else None
    y = ops.cuda_gemv(x, packed, b, ring=code)
    assert_matches(y, x, w, b, f"M={x.shape[0]} N={packed.n} K={packed.k} code={code}")


@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)])
def test_every_code_big_shapes(lib, shape):
    packed, w = _layer(*shape, asym=False, seed=shape[1])
    for nt, ms in ((1, (1, 2, 5, 8)), (2, (9, 16))):
        for code in _codes(lib, nt):
            for m in ms:
                _check(packed, w, m, code, bias=m % 2 == 1, seed=m + code)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("asym", [True, False])
@pytest.mark.parametrize("group", [128, 256, 384, -1])
def test_groups_dtypes_ragged(lib, group, asym, dtype):
    # N = 1040 (65 tiles: partial CTAs for R = 2 / 4 / 7), 48 (less than one R = 4 CTA); K = 1152 / 2304 / 128
    # with groups, 1000 / 520 / 120 per channel (columns past K inside the last superblock, stages past the
    # last one, a pair split's second CTA without any; K = 128 / 120: a single superblock;
    # row strides still multiples of 8 elements, as the maps need at M > 1)
    sdt = torch.float16 if dtype == torch.float16 else torch.bfloat16
    ks = (1000, 520, 120) if group == -1 else (1152, 2304, 128)
    for n, k in ((1040, ks[0]), (48, ks[1]), (1040, ks[2])):
        if group != -1 and k % group:
            continue
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k)
        for nt, ms in ((1, (1, 3, 8)), (2, (9, 16))):
            for code in _codes(lib, nt):
                for m in ms:
                    _check(packed, w, m, code, dtype=dtype, bias=m % 2 == 0, seed=m)


def test_scale_dtypes_strided_x_graph_pdl(lib):
    # bf16 x with fp16 scales and fp16 x with bf16 scales (the scale kind is read per call)
    for sdt, xdt in ((torch.float16, torch.bfloat16), (torch.bfloat16, torch.float16)):
        packed, w = _layer(2112, 7168, 128, True, sdt, seed=21)
        for code in _codes(lib, 1):
            _check(packed, w, 1, code, dtype=xdt, seed=1)
            _check(packed, w, 7, code, dtype=xdt, seed=2)
    # fp32 scales: refused (kNoTma), the register kernel takes them
    p32, w32 = _layer(2112, 7168, 128, True, torch.float32, seed=27)
    x32 = torch.randn(2, 7168, device=DEV, dtype=torch.bfloat16)
    assert lib.w4a16_gemv_supported(x32, p32.qweight, p32.scales, p32.zeros, 128, 0, 0, 0, 22844, 0) == K_NO_TMA
    assert not ops._cuda_tma_ok(x32, p32)
    assert_matches(ops.cuda_gemv(x32, p32), x32, w32, None, "fp32 scales, auto")
    # x rows with a padded stride (a multiple of 8 elements)
    xs = torch.randn(16, 7168 + 64, device=DEV).to(torch.bfloat16)[:, :7168]
    p16, w16 = _layer(2112, 7168, asym=False, seed=22)
    _check(p16, w16, 5, 22844, x=xs[:5])
    _check(p16, w16, 16, 24444, x=xs)
    # PDL on / off give the same bits; a graph with PDL replays on fresh x
    x = torch.randn(4, 7168, device=DEV, dtype=torch.bfloat16)
    a = ops.cuda_gemv(x, p16, ring=22844, pdl=True)
    b = ops.cuda_gemv(x, p16, ring=22844, pdl=False)
    assert torch.equal(a, b)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y1 = ops.cuda_gemv(x, p16, ring=22844, pdl=True)
        y2 = ops.cuda_gemv(x, p16, ring=21844, pdl=True)
    for seed in range(3):
        x.copy_(torch.randn(4, 7168, device=DEV, generator=torch.Generator(device=DEV).manual_seed(seed)))
        g.replay()
        torch.cuda.synchronize()
        want = x.float() @ w16.T
        for y in (y1, y2):
            assert ((y.float() - want).norm() / want.norm()).item() <= 1e-2


def test_x3d_codes_match_their_twins(lib):
    # SW = 2 (one 3-D x box per superblock in the 128-byte swizzle, at one or two token tiles) changes
    # only where x lands in shared memory: the same fragments meet the same mma in the same order, so its
    # results equal the unswizzled twin's (SW = 0: code - 200000) bit for bit, on contiguous and strided x;
    # with K % 64 != 0 the launcher runs the twin itself
    x3d = [(nt, c) for nt in (1, 2) for c in _codes(lib, nt) if c // 100000 % 10 == 2]
    assert {nt for nt, _ in x3d} == {1, 2}, f"SW = 2 codes compiled: {x3d}"
    packed, w = _layer(2112, 7168, 128, True, torch.bfloat16, seed=31)
    xs = torch.randn(16, 7168 + 64, device=DEV).to(torch.bfloat16)[:, :7168]
    pc, wc = _layer(1040, 1000, -1, False, torch.float16, seed=32)  # K % 64 != 0
    for nt, code in x3d:
        for m in ((1, 3, 8) if nt == 1 else (9, 13, 16)):
            for xm in (torch.randn(m, 7168, device=DEV, dtype=torch.bfloat16), xs[:m]):
                y = ops.cuda_gemv(xm, packed, ring=code)
                assert_matches(y, xm, w, None, f"M={m} code={code}")
                assert torch.equal(y, ops.cuda_gemv(xm, packed, ring=code - 200000)), (m, code)
            xk = torch.randn(m, 1000, device=DEV, dtype=torch.float16)
            y = ops.cuda_gemv(xk, pc, ring=code)
            assert_matches(y, xk, wc, None, f"K=1000 M={m} code={code}")
            assert torch.equal(y, ops.cuda_gemv(xk, pc, ring=code - 200000)), (m, code, "K % 64")
    # PDL in a graph, replayed on fresh x (each code at its token tiles' largest M)
    x = torch.randn(16, 7168, device=DEV, dtype=torch.bfloat16)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ys = [(8 * nt, ops.cuda_gemv(x[: 8 * nt], packed, ring=code, pdl=True)) for nt, code in x3d]
    for seed in range(2):
        x.copy_(torch.randn(16, 7168, device=DEV, generator=torch.Generator(device=DEV).manual_seed(40 + seed)))
        g.replay()
        torch.cuda.synchronize()
        for m, y in ys:
            assert_matches(y, x[:m], w, None, f"graph replay {seed}")


def test_close_to_register_kernel(lib):
    # same products, same per-superblock fp32 order inside a warp: the TMA ring and the register kernel
    # differ only in how the K slices are split over warps, so compare within rounding, and each with the
    # reference
    packed, w = _layer(2112, 7168, asym=True, seed=23)
    x = torch.randn(3, 7168, device=DEV, dtype=torch.bfloat16)
    a = ops.cuda_gemv(x, packed, ring=22844)
    b = ops.cuda_gemv(x, packed, ring=-1)
    want = assert_matches(a, x, w, None, "tma")
    assert_matches(b, x, w, None, "register")
    assert ((a.float() - b.float()).norm() / want.norm()).item() <= 4e-3


def test_refusals_and_table_fallback(lib, monkeypatch):
    packed, w = _layer(1000, 1024, seed=24)  # N % 16 != 0: no TMA maps for scales / zeros rows
    x = torch.randn(1, 1024, device=DEV, dtype=torch.bfloat16)
    assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 0, 0, 0, 22844, 0) == K_NO_TMA
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, ring=22844)
    # groups of 64 (inside a superblock): refused too
    p64, _ = _layer(1024, 1024, 64, seed=25)
    assert lib.w4a16_gemv_supported(x, p64.qweight, p64.scales, p64.zeros, 64, 0, 0, 0, 22844, 0) == K_NO_TMA
    # x rows with a stride that is not a multiple of 8 elements
    p1k, w1k = _layer(1024, 1024, seed=26)
    xs = torch.randn(3, 1028, device=DEV, dtype=torch.bfloat16)[:, :1024]
    assert lib.w4a16_gemv_supported(xs, p1k.qweight, p1k.scales, p1k.zeros, 128, 0, 0, 0, 22844, 0) == K_NO_TMA
    # an unlisted TMA code is a bad config (6)
    assert lib.w4a16_gemv_supported(x[:, :1024], p1k.qweight, p1k.scales, p1k.zeros, 128, 0, 0, 0, 29999, 0) == 6
    # the auto table: the TMA kernel where it applies, the register kernel elsewhere; both exact
    table = {(cls, t): (24444 if t == 2 else 22844) for cls in ("few", "short", "many") for t in (0, 1, 2)}
    monkeypatch.setattr(ops, "_CUDA_RING_AUTO", table)
    for pk, wk in ((packed, w), (p1k, w1k)):
        for m in (1, 4, 12):
            xm = torch.randn(m, 1024, device=DEV, dtype=torch.bfloat16)
            want = (24444 if m > 8 else 22844) if pk.n % 16 == 0 else -1
            assert ops._cuda_auto_ring(xm, pk) == want
            y = ops.w4a16_linear(xm, pk, backend="cuda")
            assert_matches(y, xm, wk, None, f"auto N={pk.n} M={m}")
