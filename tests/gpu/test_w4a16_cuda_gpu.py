"""The CUDA tensor-core W4A16 decode kernel (backend "cuda", csrc/w4a16_gemv.cuh) on a GPU.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (the canonical formula,
independent of the packed layout) on fresh random data: M in {1, 2, 3, 4, 8, 16} x symmetric /
asymmetric zeros x group 128 / 64 / 32 / 256 / per channel x bf16 / fp16, merged two-shard weights,
ragged N and K, every launch config the benchmark sweeps, CUDA-graph capture and the dispatch; the
ring kernel (round 2): every compiled shape code, groups / scale dtypes, its fallback to the
register kernel, PDL and graph capture; the round-3 register kernel: every compiled code (R, U, NT,
pipe) x scale dtypes x groups 128 / 384 / per channel x ragged K (the tail step) x warp counts; the
bulk ring kernel (session 6, codes >= 10000): every code x the three shapes, sym / asym, bf16 /
fp16, groups 128 / 256 / per channel, partial CTAs (N % (16 WR) != 0), fp32 scales, strided x,
graph + PDL, its refusals (kNoBulk, codes too large for shared memory refused before launch) and the
_CUDA_RING_AUTO table (its fallbacks, and its choices on the three measured shapes).
"""

import pytest
import torch

from _w4a16_gpu_data import assert_matches, check_pdl_chain
from _w4a16_gpu_data import canonical as _canonical
from _w4a16_gpu_data import layer as _layer
from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
TOL = 1e-2
MS = (1, 2, 3, 4, 8, 16)
# (row tiles, superblocks per chunk, warps[, pipe]); compiled: w4a16_gemv.cuh kRegCodes
CONFIGS_NT1 = [(1, 2, 4), (1, 4, 8), (2, 2, 8), (4, 1, 4), (1, 2, 16), (1, 4, 3), (1, 2, 8, 1), (1, 1, 16, 1),
               (4, 1, 8, 1), (4, 1, 3, 1)]
CONFIGS_NT2 = [(1, 2, 8), (2, 1, 4), (2, 1, 8), (1, 1, 8, 1), (2, 1, 8, 1), (2, 1, 3, 1), (4, 1, 8), (4, 1, 3)]


def _check(packed, w, m, dtype=torch.bfloat16, bias=True, config=None, seed=0):
    gen = torch.Generator(device=DEV).manual_seed(1000 + seed)
    x = torch.randn(m, packed.k, device=DEV, generator=gen).to(dtype)
    b = torch.randn(packed.n, device=DEV, generator=gen).to(dtype) if bias else None
    assert ops.cuda_supported(x, packed)
    y = ops.w4a16_linear(x, packed, b, backend="cuda") if config is None else ops.cuda_gemv(x, packed, b, config)
    assert_matches(y, x, w, b, f"M={m} N={packed.n} K={packed.k} config={config}")


@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)])
def test_big_shapes(shape):
    packed, w = _layer(*shape, seed=shape[0])
    for m in MS:
        _check(packed, w, m, bias=m % 2 == 1, seed=m)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group", [128, 64, 32, 16, 256, -1])
@pytest.mark.parametrize("asym", [True, False])
def test_groups_dtypes(group, asym, dtype):
    for n, k in ((300, 1024), (77, 768)):
        if group != -1 and k % group:
            continue
        sdt = torch.float16 if dtype == torch.float16 else torch.bfloat16
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k + group)
        for m in MS:
            _check(packed, w, m, dtype=dtype, bias=m % 2 == 0, seed=m)


@pytest.mark.parametrize("k", [1540, 200, 4])
def test_ragged_k_per_channel_and_fp32_scales(k):
    for group in (-1,) + ((k // 2,) if k % 256 == 0 else ()):
        packed, w = _layer(45, k, group, True, torch.float32, seed=k)
        for m in (1, 3, 9):
            _check(packed, w, m, seed=m)


def test_merged_two_shards_ragged_n():
    # a merged layer (1536 + 576 rows, and 37 + 100) is one packed weight without act-order
    for parts in ((1536, 576), (37, 100)):
        qs, zs, ss = zip(*(_canonical(n, 1536, 128, True, torch.bfloat16, seed=n) for n in parts))
        q, z, s = torch.cat(qs), torch.cat(zs), torch.cat(ss)
        packed = ops.pack_w4a16(q, z, s, 128)
        w = ref.dequantize_canonical(q, z, s.float(), 128)
        for m in (1, 4, 16):
            _check(packed, w, m, seed=m)


@pytest.mark.parametrize("config", CONFIGS_NT1 + CONFIGS_NT2)
def test_configs(config):
    for n, k in ((2112, 7168), (24576, 1536), (1000, 384)):
        packed, w = _layer(n, k, 128, True, seed=n)
        for m in ((1, 5, 8) if config in CONFIGS_NT1 else (9, 16)):
            _check(packed, w, m, config=config, seed=m)


def test_strided_rows_and_3d_x():
    packed, w = _layer(640, 1024, seed=3)
    x = torch.randn(2, 3, 1024 + 12, device=DEV).to(torch.bfloat16)[..., 4 : 4 + 1024]
    y = ops.w4a16_linear(x, packed, backend="cuda")
    want = x.float() @ w.T
    assert ((y.float() - want).norm() / want.norm()).item() <= TOL


def test_cuda_graph_capture():
    packed, w = _layer(2112, 7168, seed=5)
    x = torch.randn(4, 7168, device=DEV, dtype=torch.bfloat16)
    ops.w4a16_linear(x, packed, backend="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.w4a16_linear(x, packed, backend="cuda")
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    want = x.float() @ w.T
    assert ((y.float() - want).norm() / want.norm()).item() <= TOL


def test_dispatch_and_fallbacks():
    packed, _ = _layer(256, 512, seed=6)
    x1 = torch.randn(1, 512, device=DEV, dtype=torch.bfloat16)
    expect = "cuda" if ops._CUDA_MAX_M >= 1 else "triton"
    assert ops.w4a16_backend(x1, packed) == expect
    # M = 32 runs as two blocks of 16 rows when asked for; auto sends it there only for the classes of
    # _CUDA_BLOCKS_MAX_M (not this few-rows layer)
    x32 = torch.randn(32, 512, device=DEV, dtype=torch.bfloat16)
    assert ops.cuda_supported(x32, packed) and "few" not in ops._CUDA_BLOCKS_MAX_M
    assert ops.w4a16_backend(x32, packed) != "cuda"
    # act-order and 8-bit take the Triton path
    gen = torch.Generator(device=DEV).manual_seed(7)
    q = torch.randint(0, 16, (64, 256), device=DEV, generator=gen)
    s = torch.rand(64, 2, device=DEV, generator=gen) + 0.1
    gi = (torch.arange(256, device=DEV) // 128)[torch.randperm(256, device=DEV, generator=gen)]
    ao = ops.pack_w4a16(q, None, s, 128, g_idx=[(0, 64, gi)])
    xa = torch.randn(1, 256, device=DEV, dtype=torch.bfloat16)
    assert not ops.cuda_supported(xa, ao) and ops.w4a16_backend(xa, ao) != "cuda"
    with pytest.raises(ValueError, match="backend 'cuda'"):
        ops.w4a16_linear(xa, ao, backend="cuda")
    # misaligned x (pointer off by 2 bytes) is not taken
    xm = torch.randn(1, 516, device=DEV, dtype=torch.bfloat16)[:, 1:513]
    assert not ops.cuda_supported(xm, packed)


# ---- round 2: the cp.async ring kernel (the auto default where ring_ok holds) ----


def _ring_codes(nt):
    from qlinear.kernels import cuda_ext

    return [c for c in cuda_ext.load().w4a16_ring_configs(nt) if c < 10000]  # bulk codes: tests below


def test_ring_every_code():
    for nt, ms in ((1, (1, 5, 8)), (2, (9, 16))):
        codes = _ring_codes(nt)
        assert codes
        for n, k in ((2112, 7168), (24576, 1536), (1000, 384), (300, 1540)):
            packed, w = _layer(n, k, 128 if k % 128 == 0 else -1, True, seed=n + k)
            for code in codes:
                for m in ms:
                    gen = torch.Generator(device=DEV).manual_seed(m + code)
                    x = torch.randn(m, k, device=DEV, generator=gen).to(torch.bfloat16)
                    b = torch.randn(n, device=DEV, generator=gen).to(torch.bfloat16)
                    assert_matches(ops.cuda_gemv(x, packed, b, ring=code), x, w, b, f"M={x.shape[0]} N={packed.n} K={packed.k} ring {code}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group,sdt", [(128, None), (256, None), (-1, torch.float32), (384, None)])
def test_ring_groups_scales(group, sdt, dtype):
    sdt = sdt or (torch.float16 if dtype == torch.float16 else torch.bfloat16)
    packed, w = _layer(512, 1536, group, group != 256, sdt, seed=group + 11)
    from qlinear.kernels import cuda_ext

    lib = cuda_ext.load()
    for m in (1, 3, 8, 12, 16):
        x = torch.randn(m, 1536, device=DEV).to(dtype)
        assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, packed.group_size) == 0
        out = torch.empty(m, 512, device=DEV, dtype=dtype)
        used = lib.w4a16_gemv(out, x, packed.qweight, packed.scales, packed.zeros, None, packed.group_size)
        # auto: the ring for M <= 8 on rows of <= 16 superblocks, the register kernel otherwise
        assert (used > 0) == (m <= 8), f"M={m}: auto took {used}"
        ring = torch.empty_like(out)
        assert lib.w4a16_gemv(ring, x, packed.qweight, packed.scales, packed.zeros, None, packed.group_size,
                              ring=1424 if m <= 8 else 2224) > 0
        assert ((ring.float() - x.float() @ w.T).norm() / (x.float() @ w.T).norm()).item() <= TOL
        want = x.float() @ w.T
        assert ((out.float() - want).norm() / want.norm()).item() <= TOL


def test_ring_falls_back_to_register_kernel():
    from qlinear.kernels import cuda_ext

    lib = cuda_ext.load()
    for n, group in ((77, 128), (256, 64)):  # N % 4 != 0, group < 128
        packed, w = _layer(n, 1024, group, True, seed=n)
        x = torch.randn(2, 1024, device=DEV, dtype=torch.bfloat16)
        out = torch.empty(2, n, device=DEV, dtype=torch.bfloat16)
        used = lib.w4a16_gemv(out, x, packed.qweight, packed.scales, packed.zeros, None, packed.group_size)
        assert used < 0, "the register kernel takes this case"
        assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, packed.group_size,
                                        ring=1424) == 8
        want = x.float() @ w.T
        assert ((out.float() - want).norm() / want.norm()).item() <= TOL


def test_ring_pdl_and_graph():
    packed, w = _layer(7168, 2048, seed=9)
    x = torch.randn(1, 2048, device=DEV, dtype=torch.bfloat16)
    y0 = ops.cuda_gemv(x, packed, pdl=True)
    y1 = ops.cuda_gemv(x, packed, pdl=False)
    assert torch.equal(y0, y1)  # deterministic, PDL changes nothing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops.cuda_gemv(x, packed, pdl=True)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    want = x.float() @ w.T
    assert ((y.float() - want).norm() / want.norm()).item() <= TOL


@pytest.mark.parametrize("m,config", [(1, (1, 2, 4, 0)), (4, (4, 1, 4, 2)), (16, (2, 1, 2, 2))])
def test_reg_pdl_chain_in_a_graph(m, config):
    """The register kernel requests its first chunk's weights before griddepcontrol.wait and, at
    M <= 8, triggers its dependents at its start: a chain of launches where each one's x is the
    previous one's output (K = N) must still see every input complete. PDL on and off give the same
    bits; a captured chain replayed on fresh x matches the fp32 reference at every link."""
    packed, w = _layer(2048, 2048, seed=11)
    x = torch.randn(m, 2048, device=DEV, dtype=torch.bfloat16)
    check_pdl_chain(packed, w, x, lambda xi, pdl: ops.cuda_gemv(xi, packed, config=config, pdl=pdl), tol=TOL)


# ---- round 3: the register kernel rebuilt for instruction count ----


def _reg_codes():
    from qlinear.kernels import cuda_ext

    return list(cuda_ext.load().w4a16_reg_configs())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reg_every_code(dtype):
    codes = _reg_codes()
    assert codes
    cases = [  # (n, k, group, asym, scale dtype): tails (K % 128 != 0), wide groups, per channel
        (1000, 384, 128, True, None),
        (300, 1540, -1, True, torch.float32),
        (130, 1536, 384, False, torch.float16),
        (64, 2304, 256, True, torch.float32),
    ]
    for n, k, group, asym, sdt in cases:
        sdt = sdt or (torch.float16 if dtype == torch.float16 else torch.bfloat16)
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k)
        for code in codes:
            r, u, nt, pipe = code // 1000, code // 100 % 10, code // 10 % 10, code % 10
            ms = (1, 3, 8) if nt == 1 else (9, 16)
            # pipe 2 (chunks round-robin over the warps) runs the pipe 0 instances
            for p in (pipe, 2) if pipe == 0 else (pipe,):
                for warps in (1, 3, 8):
                    for m in ms:
                        _check(packed, w, m, dtype=dtype, bias=m % 2 == 1, config=(r, u, warps, p), seed=m + code)


def test_reg_pipe_out_of_range_refused():
    """pipe 4 or -1 is kBadConfig (6), not silently the double-buffered instance; pipe 3 (the x-staged
    kernel) has no one-token-tile code 1213 compiled: 6 as well."""
    from qlinear.kernels import cuda_ext

    C = cuda_ext.load()
    packed, _ = _layer(256, 1024, 128, True, torch.bfloat16, seed=3)
    x = torch.randn(1, 1024, device=DEV, dtype=torch.bfloat16)
    for pipe, want in ((3, 6), (4, 6), (-1, 6), (2, 0), (1, 0), (0, 0)):
        why = C.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, packed.group_size, 1, 2, 4, -1,
                                     pipe, 0)
        assert why == want, (pipe, why)


# ---- bulk ring kernel (session 6, ring codes >= 10000: sm_90 cp.async.bulk + mbarrier ring)


def _bulk_codes(nt):
    from qlinear.kernels import cuda_ext

    codes = [c for c in cuda_ext.load().w4a16_ring_configs(nt) if 10000 <= c < 20000]  # TMA ring: its own file
    assert codes, "no bulk ring codes compiled"
    return codes


def _needs_sm90():
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the bulk ring kernel needs sm_90")


def _check_ring(packed, w, m, code, dtype=torch.bfloat16, bias=True, seed=0, x=None):
    gen = torch.Generator(device=DEV).manual_seed(2000 + seed)
    if x is None:
        x = torch.randn(m, packed.k, device=DEV, generator=gen).to(dtype)
    b = torch.randn(packed.n, device=DEV, generator=gen).to(dtype) if bias else None
    y = ops.cuda_gemv(x, packed, b, ring=code)
    assert_matches(y, x, w, b, f"M={x.shape[0]} N={packed.n} K={packed.k} code={code}")


@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)])
def test_bulk_codes_big_shapes(shape):
    _needs_sm90()
    packed, w = _layer(*shape, seed=shape[1])
    for nt, ms in ((1, (1, 4, 8)), (2, (9, 16))):
        for code in _bulk_codes(nt):
            for m in ms:
                _check_ring(packed, w, m, code, bias=m % 2 == 1, seed=m + code)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("asym", [True, False])
@pytest.mark.parametrize("group", [128, 256, -1])
def test_bulk_groups_dtypes_ragged_n(group, asym, dtype):
    # N = 1040 (65 tiles: a partial CTA for WR = 2 / 4), 48 (< one WR = 4 CTA); K = 1024 / 2304
    _needs_sm90()
    sdt = torch.float16 if dtype == torch.float16 else torch.bfloat16
    for n, k in ((1040, 1024), (48, 2304)):
        if group != -1 and k % group:
            continue
        packed, w = _layer(n, k, group, asym, sdt, seed=n + k)
        for nt, ms in ((1, (1, 3, 8)), (2, (9, 16))):
            for code in _bulk_codes(nt):
                for m in ms:
                    _check_ring(packed, w, m, code, dtype=dtype, bias=m % 2 == 0, seed=m)


def test_bulk_fp32_scales_strided_x_and_graph():
    _needs_sm90()
    packed, w = _layer(2112, 7168, 128, True, torch.float32, seed=11)
    for code in (11424, 11824):
        _check_ring(packed, w, 1, code, seed=1)
    # x rows with a padded stride (multiple of 8 elements): still bulk-able
    xs = torch.randn(16, 7168 + 64, device=DEV).to(torch.bfloat16)[:, :7168]
    packed16, w16 = _layer(2112, 7168, seed=12)
    _check_ring(packed16, w16, 5, 11424, x=xs[:5])
    _check_ring(packed16, w16, 16, 11814, x=xs)
    # CUDA graph capture with PDL
    x = torch.randn(4, 7168, device=DEV, dtype=torch.bfloat16)
    out = ops.cuda_gemv(x, packed16, ring=11424, pdl=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = ops.cuda_gemv(x, packed16, ring=11424, pdl=True)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    want = x.float() @ w16.T
    assert ((out.float() - want).norm() / want.norm()).item() <= TOL


def test_bulk_refuses_unaligned_and_auto_table_falls_back(monkeypatch):
    _needs_sm90()
    from qlinear.kernels import cuda_ext

    lib = cuda_ext.load()
    packed, w = _layer(1000, 1024, seed=13)  # N % 16 != 0: no bulk
    x = torch.randn(1, 1024, device=DEV, dtype=torch.bfloat16)
    code = lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 0, 0, 0, 11424, 0)
    assert code == 9  # W4GemvSupport::kNoBulk
    with pytest.raises(RuntimeError, match="not supported"):
        ops.cuda_gemv(x, packed, ring=11424)
    # K % 128 != 0: no bulk either
    p2, _ = _layer(64, 1000, -1, True, seed=14)
    x2 = torch.randn(1, 1000, device=DEV, dtype=torch.bfloat16)
    assert lib.w4a16_gemv_supported(x2, p2.qweight, p2.scales, p2.zeros, 1000, 0, 0, 0, 11424, 0) == 9
    # the auto table: bulk where it applies, the launcher's choice elsewhere; both exact
    monkeypatch.setattr(ops, "_CUDA_RING_AUTO", {("few", 1): 11424, ("many", 1): 11424, ("short", 1): 14143,
                                                 ("few", 2): 11814, ("many", 2): 11814, ("short", 2): 14124})
    for n, k in ((1000, 1024), (1024, 1024), (2112, 1536)):
        pk, wk = _layer(n, k, seed=n)
        for m in (1, 16):
            _check(pk, wk, m, seed=m)
    # M == 1 entries, the register kernel (-1) and a cp.async ring code where the ring does not apply
    monkeypatch.setattr(ops, "_CUDA_RING_AUTO", {("short", 0): -1, ("short", 1): 4124, ("short", 2): 4124})
    for n in (1024, 1002):  # N % 4 != 0: no ring, the launcher decides
        pk, wk = _layer(n, 1024, seed=n)
        for m in (1, 3, 12):
            x = torch.randn(m, 1024, device=DEV, dtype=torch.bfloat16)
            want = -1 if m == 1 else (4124 if n % 4 == 0 else 0)
            assert ops._cuda_auto_ring(x, pk) == want, (n, m)
            _check(pk, wk, m, seed=m)


def test_too_large_ring_is_refused_up_front():
    # session 6 run 2: bulk 11824 at M = 16 needed 339 KB of shared memory (> 227 KB) and failed at
    # launch with cudaErrorInvalidValue; now it is not compiled for M > 8 and refused before launch
    from qlinear.kernels import cuda_ext

    lib = cuda_ext.load()
    assert 11824 not in lib.w4a16_ring_configs(2) and 1824 not in lib.w4a16_ring_configs(2)
    packed, _ = _layer(2112, 7168, seed=15)
    x = torch.randn(16, 7168, device=DEV, dtype=torch.bfloat16)
    for code in (11824, 1824):
        assert lib.w4a16_gemv_supported(x, packed.qweight, packed.scales, packed.zeros, 128, 0, 0, 0, code, 0) == 6
        with pytest.raises(RuntimeError, match="not supported .*not compiled"):
            ops.cuda_gemv(x, packed, ring=code)
    torch.cuda.synchronize()  # no error left pending for the next kernel
    torch.zeros(1, device=DEV).add_(1)


def test_out_rows_of_a_larger_output():
    # out=: two blocks of rows (16 + 9) of one output with a padded row stride, each from its own launch
    # (the automatic kernel of each block's M); the rows around them stay as they were; a misshaped out is
    # refused by the extension and names the parameter
    packed, w = _layer(7168, 16384, seed=50)
    x = torch.randn(25, 16384, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(7168, device=DEV, dtype=torch.bfloat16)
    big = torch.full((27, 7168 + 64), 7.0, device=DEV, dtype=torch.bfloat16)
    y = big[1:26, :7168]
    for lo, hi in ((0, 16), (16, 25)):
        r = ops.cuda_gemv(x[lo:hi], packed, b, out=y[lo:hi])
        assert r.data_ptr() == y[lo:hi].data_ptr()
    assert_matches(y, x, w, b, "out = two blocks of rows")
    assert bool((big[0] == 7).all()) and bool((big[26] == 7).all()) and bool((big[1:26, 7168:] == 7).all())
    with pytest.raises(RuntimeError, match="out: expected"):
        ops.cuda_gemv(x[:4], packed, out=y[:3])


def test_blocks_of_rows_auto_and_graph():
    # past 16 rows the "cuda" backend runs blocks of 16 (each with its own M's kernel: 16 + 1, 16 + 8, 16 + 16
    # rows), and auto takes it for the 7168x16384 class up to _CUDA_BLOCKS_MAX_M; strided x rows; in a CUDA
    # graph (PDL between the blocks) replayed on fresh x
    packed, w = _layer(7168, 16384, seed=51)
    b = torch.randn(7168, device=DEV, dtype=torch.bfloat16)
    assert ops._CUDA_BLOCKS_MAX_M.get("many", 0) >= 32
    for m in (17, 24, 32):
        x = torch.randn(m, 16384 + 64, device=DEV, dtype=torch.bfloat16)[:, :16384]
        assert ops.w4a16_backend(x, packed) == "cuda"
        assert_matches(ops.w4a16_linear(x, packed, b, backend="cuda"), x, w, b, f"blocks M={m}")
        assert_matches(ops.w4a16_linear(x, packed, b), x, w, b, f"auto M={m}")
    x = torch.randn(40, 16384, device=DEV, dtype=torch.bfloat16)
    ops.w4a16_linear(x, packed, b, backend="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.w4a16_linear(x, packed, b, backend="cuda")
    for seed in range(2):
        x.copy_(torch.randn(40, 16384, device=DEV, generator=torch.Generator(device=DEV).manual_seed(60 + seed)))
        g.replay()
        torch.cuda.synchronize()
        assert_matches(y, x, w, b, f"blocks M=40 graph replay {seed}")


# the committed dispatch table (qlinear/ops/w4a16.py _CUDA_RING_AUTO) on the measured shapes
AUTO_WANT = {(2112, 7168): {1: -1, 4: 252444, 8: 252444, 16: 1262434}, (24576, 1536): {1: -1, 4: -1, 8: -1, 16: -1},
             (7168, 16384): {1: 257434, 4: 257434, 8: 257434, 16: 257434}}
# ... and _CUDA_REG_AUTO's register configs where the ring table says -1 (None: the launcher's), or
# where a TMA ring entry does not apply (short rows at M = 16: _CUDA_XS_AUTO's x-staged config)
REG_WANT = {(2112, 7168): {1: (1, 2, 16, 2, 1), 4: (1, 2, 16, 2, 1), 16: (1, 2, 8, 0)},
            (24576, 1536): {1: (4, 1, 4, 2), 4: (4, 1, 4, 2), 8: (4, 1, 4, 2), 16: (1, 2, 12, 3)},
            (7168, 16384): {1: (1, 2, 4, 0), 4: (2, 2, 6, 2), 8: (2, 2, 6, 2), 16: (4, 1, 8, 2)}}


@pytest.mark.parametrize("shape", list(AUTO_WANT))
def test_auto_table_on_measured_shapes(shape):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the table's bulk codes need sm_90")
    packed, w = _layer(*shape, seed=shape[0] + 1)
    for m, want in AUTO_WANT[shape].items():
        x = torch.randn(m, shape[1], device=DEV, dtype=torch.bfloat16)
        assert ops._cuda_auto_ring(x, packed) == want, (shape, m)
        if m in REG_WANT[shape]:
            assert ops._cuda_auto_reg(x, packed) == REG_WANT[shape][m], (shape, m)
        _check(packed, w, m, seed=m + 40)


@pytest.mark.parametrize("shape,m", [((2112, 7168), 4), ((2112, 7168), 1)])
def test_auto_table_symmetric_layer_drops_the_fold(shape, m):
    """A GPTQ symmetric layer (fp16 scales, no zero points) takes the table's config without the
    zero-point fold (_cuda_auto_reg); the asymmetric layer of the same shape keeps it."""
    want = REG_WANT[shape][m]
    assert len(want) == 5 and want[4] == 1, "the table entry this test is about has the fold"
    sym, w = _layer(*shape, 128, False, torch.float16, seed=shape[0] + m)
    asym, _ = _layer(*shape, 128, True, torch.float16, seed=shape[0] + m)
    assert sym.zeros is None and asym.zeros is not None
    x = torch.randn(m, shape[1], device=DEV, dtype=torch.float16)
    assert ops._cuda_auto_reg(x, sym) == want[:4]
    assert ops._cuda_auto_reg(x, asym) == want
    _check(sym, w, m, dtype=torch.float16, seed=m + 50)
