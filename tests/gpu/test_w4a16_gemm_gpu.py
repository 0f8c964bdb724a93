"""The CUDA W4A16 GEMMs for M > 16 on a GPU: backend "cuda_gemm" (csrc/w4a16_gemm.cuh, mma.sync) and
backend "cuda_wgmma" (csrc/w4a16_wgmma.cuh, Hopper wgmma; skipped without an sm_90 GPU), each through
the same tests where they apply.

Against ``x @ W.T + bias`` in fp32 with W from ``dequantize_canonical`` (independent of the packed
layout) on fresh random data: M in {17, 32, 33, 64, 100, 128, 256, 300} x the issue shapes and ragged
N / K (a partial last superblock), symmetric / asymmetric, groups 128 / 256 / per channel, bf16 /
fp16 x, bf16 / fp16 / fp32 scales, every compiled (warps, tokens, stages) with and without a K split
(N % (16 warps) != 0),
strided x rows, CUDA-graph replays (the split-K counters must be left zeroed), the wgmma GEMM's spread
K-split reduction (bit-equal to the last-arrival one) and pair reduction, its TMA-store epilogue
(bit-equal to the threads' store), programmatic dependent launch (a chain of two GEMMs in a graph), the
refusals and the fallback of the public op.
"""

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from _w4a16_gpu_data import assert_matches
from _w4a16_gpu_data import layer as _layer
from qlinear.kernels import _splitk
from qlinear.ops import w4a16 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"


_ext = cuda_ext_ops


def _x(m, k, dtype, seed, row_pad=0):
    gen = torch.Generator(device=DEV).manual_seed(5000 + seed)
    return (torch.randn(m, k + row_pad, device=DEV, generator=gen)).to(dtype)[:, :k]


def _wgmma_ext():
    C = _ext()
    if not ops._wgmma_built(torch.device(DEV)):
        pytest.skip("the wgmma GEMM needs an sm_90 GPU and an sm_90a build")
    return C


# Per GEMM family: its op, and per compiled config (splits -> the op's config tuple, tokens per CTA).
def _family(name):
    if name == "cuda_gemm":
        C = _ext()
        codes = [(c // 1000, (c // 10 % 100) * 8, c % 10) for c in C.w4a16_gemm_configs()]
        return ops.cuda_gemm, [(lambda s, w=w, t=t, st=st: (w, t, s, st), t) for w, t, st in codes]
    C = _wgmma_ext()
    # P * 10000 + H * 1000 + (tokens / 8) * 10 + stages; H = 0 / 1 / 2: 128 / 64 / 192 weight rows per CTA,
    # P = 1: a producer warpgroup
    cfgs = [(c % 1000 // 10 * 8, c % 10, (128, 64, 192)[c % 10000 // 1000], c // 10000)
            for c in C.w4a16_wgmma_configs()]
    assert {rows for _, _, rows, _ in cfgs} == {64, 128, 192}
    assert {rows for _, _, rows, prod in cfgs if prod == 1} == {128}
    assert {rows for _, _, rows, prod in cfgs if prod == 2} == {64}  # warpgroups on alternate superblocks
    return ops.cuda_wgmma, [(lambda s, t=t, st=st, r=r, pr=pr: (t, s, st, 0, r, pr), t) for t, st, r, pr in cfgs]


FAMILIES = ["cuda_gemm", "cuda_wgmma"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("shape", [(2112, 7168), (24576, 1536), (7168, 16384)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_issue_shapes_auto_config(shape, family):
    run, _ = _family(family)
    n, k = shape
    packed, w = _layer(n, k, seed=n)
    for m in (17, 64, 128, 256) + ((1, 1024) if family == "cuda_wgmma" else ()):
        x = _x(m, k, torch.bfloat16, m)
        b = torch.randn(n, device=DEV).to(torch.bfloat16) if m % 2 else None
        assert_matches(run(x, packed, b), x, w, b, f"{family} M={m} {n}x{k} auto config")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("group, asym, sdt", [(128, True, torch.bfloat16), (256, False, torch.float16),
                                              (-1, True, torch.float32), (128, False, torch.float32)])
def test_groups_scales_ragged(group, asym, sdt, dtype, family):
    """N not a multiple of any row tile, K with a partial last superblock (per channel) or whole groups."""
    run, _ = _family(family)
    k = 1000 if group == -1 else 1024 + (256 if group == 256 else 128)
    n = 300
    packed, w = _layer(n, k, group, asym, sdt, seed=group + k)
    for m in (17, 33, 100, 300):
        x = _x(m, k, dtype, m, row_pad=8 if m % 2 else 0)
        b = torch.randn(n, device=DEV).to(dtype)
        assert_matches(run(x, packed, b), x, w, b, f"{family} M={m} group={group} asym={asym} {sdt} {dtype}")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_config_with_and_without_split(family):
    run, cfgs = _family(family)
    n, k = 520, 2048
    packed, w = _layer(n, k, seed=3)
    for make, tokens in cfgs:
        for splits in (1, 3, 16):
            for m in (tokens - 5, tokens + 9):
                cfg = make(splits)
                x = _x(m, k, torch.bfloat16, m + sum(cfg))
                b = torch.randn(n, device=DEV).to(torch.bfloat16)
                assert_matches(run(x, packed, b, config=cfg), x, w, b, f"{family} M={m} config={cfg}")
    assert int(_splitk.locks(torch.device(DEV)).abs().sum()) == 0  # the last CTA of a tile reset its counter


@pytest.mark.parametrize("family, cfg", [("cuda_gemm", (8, 64, 8, 6)), ("cuda_wgmma", (64, 8, 8, 1)),
                                         ("cuda_wgmma", (128, 7, 4, 2)), ("cuda_wgmma", (128, 4, 4, 3, 64))])
def test_graph_replays_keep_counters_zeroed(family, cfg):
    run, _ = _family(family)
    n, k = 2112, 7168
    packed, w = _layer(n, k, seed=9)
    x = _x(64, k, torch.bfloat16, 1)
    run(x, packed, None, config=cfg)  # warm up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = run(x, packed, None, config=cfg)
    for i in range(3):
        x.copy_(_x(64, k, torch.bfloat16, 10 + i))
        g.replay()
        torch.cuda.synchronize()
        assert_matches(y, x, w, None, f"{family} graph replay {i}")
    assert int(_splitk.locks(torch.device(DEV)).abs().sum()) == 0


def test_wgmma_refusals_and_public_op():
    C = _wgmma_ext()
    n, k = 256, 1024
    packed, w = _layer(n, k, seed=4)
    locks = _splitk.locks(torch.device(DEV))
    x = _x(140, k, torch.bfloat16, 2)
    sup = lambda xx, *cfg: C.w4a16_wgmma_supported(xx, packed.qweight, packed.scales, packed.zeros, 128, locks, *cfg)  # noqa: E731
    assert sup(x) == 0
    assert sup(x, 128, 2, 5) == 0
    assert sup(x, 96, 1, 5) == 6  # 96 tokens per CTA are not compiled
    assert sup(x, 128, 99, 5) == 6  # more splits than superblocks
    xs = torch.randn(140, k + 4, device=DEV).to(torch.bfloat16)[:, :k]  # row stride % 8 != 0
    assert sup(xs) == 5
    assert not ops.cuda_wgmma_supported(xs, packed)
    y = ops.w4a16_linear(x, packed, backend="cuda_wgmma")
    assert torch.equal(y, ops.cuda_wgmma(x, packed))
    assert_matches(y, x, w, None, "public op, backend cuda_wgmma")
    with pytest.raises(ValueError, match="cuda_wgmma_supported"):
        ops.w4a16_linear(xs, packed, backend="cuda_wgmma")
    p64, _ = _layer(n, k, 64, True, seed=5)
    assert not ops.cuda_wgmma_supported(x, p64)
    assert C.w4a16_wgmma_supported(x, p64.qweight, p64.scales, p64.zeros, 64, locks) == 4
    with pytest.raises(ValueError, match="tokens, splits, stages"):
        ops.cuda_wgmma(x, packed, config=(8, 128, 1, 5, 0, 0, 0))  # seven fields
    assert sup(x, 128, 2, 5, 4) == 6  # reduce is 0, 1, 2 or 3
    assert sup(x, 128, 2, 5, 2) == 0
    assert sup(x, 128, 2, 5, 3) == 0  # pairs: an even number of splits, no producer warpgroup
    assert sup(x, 128, 3, 5, 3) == 6  # 8 superblocks in 3 splits of 3 / 3 / 2
    assert sup(x, 256, 2, 3, 3, 128, 1) == 6
    # 64 rows per CTA: compiled for (128 tokens, 4 stages) and (256, 3), not for 64 tokens; 192 rows
    # for (128, 4) only
    assert sup(x, 128, 2, 4, 0, 64) == 0
    assert sup(x, 64, 2, 8, 0, 64) == 6
    assert sup(x, 128, 2, 5, 0, 64) == 6
    assert sup(x, 128, 2, 4, 0, 192) == 0
    assert sup(x, 256, 1, 3, 0, 192) == 6
    # a producer warpgroup: compiled for 128 rows, 256 tokens, 3 stages only
    assert sup(x, 256, 1, 3, 0, 128, 1) == 0
    assert sup(x, 256, 1, 3, 0, 64, 1) == 6
    assert sup(x, 128, 2, 4, 0, 128, 1) == 6
    assert sup(x, 128, 2, 4, 0, 192, 1) == 6
    assert sup(x, 256, 1, 3, 0, 128, 2) == 6  # producer is 0 or 1
    with pytest.raises(RuntimeError, match="rows: expected 0 .automatic., 64, 128 or 192"):
        sup(x, 128, 2, 4, 0, 32)
    wide, _ = _layer(24576, 1536, seed=7)
    xw = _x(128, 1536, torch.bfloat16, 3)
    # 192 row tiles x 2 splits: a spread reduction's grid must fit on the GPU at once
    assert C.w4a16_wgmma_supported(xw, wide.qweight, wide.scales, wide.zeros, 128, locks, 128, 2, 4, 2) == 6
    assert C.w4a16_wgmma_supported(xw, wide.qweight, wide.scales, wide.zeros, 128, locks, 128, 2, 4, 1) == 0


def test_wgmma_spread_reduction_bits():
    """reduce = 2 (each of a tile's S CTAs sums 1 / S of the tile, after all S partials are stored)
    gives the bits of reduce = 1 (the last CTA to arrive sums it all): both sum in split order. Token
    tiles of 64 / 128 / 256, splits that do not divide the tile's values, shares of several float4 per
    thread, bias, ragged N and M; the automatic choice spreads where the grid fits, and the counters
    are left zeroed."""
    C = _wgmma_ext()
    locks = _splitk.locks(torch.device(DEV))
    cases = [(2112, 7168, 128, (128, 7, 4)), (520, 2048, 200, (64, 3, 8)), (1000, 4096, 300, (256, 5, 3)),
             (300, 1024, 33, (64, 2, 8))]
    for n, k, m, cfg in cases:
        packed, w = _layer(n, k, seed=n + m)
        x = _x(m, k, torch.bfloat16, m)
        b = torch.randn(n, device=DEV).to(torch.bfloat16) if m % 2 else None
        last = ops.cuda_wgmma(x, packed, b, cfg + (1,))
        spread = ops.cuda_wgmma(x, packed, b, cfg + (2,))
        assert torch.equal(last, spread), f"{n}x{k} M={m} {cfg}: spread and last-arrival sums differ"
        for reduce in (1, 2):  # programmatic dependent launch changes when, not what
            y = ops.cuda_wgmma(x, packed, b, cfg + (reduce,), pdl=True)
            assert torch.equal(y, spread), f"{n}x{k} M={m} {cfg} reduce={reduce}: PDL changed the result"
        assert_matches(spread, x, w, b, f"spread reduction {n}x{k} M={m} {cfg}")
        assert int(locks.abs().sum()) == 0
    packed, _ = _layer(2112, 7168, seed=1)
    x = _x(128, 7168, torch.bfloat16, 1)
    out = torch.empty(128, 2112, device=DEV, dtype=torch.bfloat16)
    code = C.w4a16_wgmma(out, x, packed.qweight, packed.scales, packed.zeros, None, 128, locks)
    assert code // 10**9 == 2 and code // 10 % 1000 == 7, code  # 17 tiles x 7 splits: spread


def test_wgmma_pair_reduction():
    """reduce = 3: the K split summed in pairs (clusters of two CTAs along the splits, each summing half of
    the tile through distributed shared memory, then the pair sums in pair order by the last CTA to arrive
    per half). Against the fp32 reference and, within fp32 rounding, the last-arrival sum; one pair (no
    workspace) and several, 64 / 128 / 192 weight rows, 64 / 128 / 176 / 256 tokens (176: one A buffer or
    half-superblock ones), ragged N and M, bias,
    bf16 / fp16; PDL changes no bit, and the counters are left zeroed."""
    _wgmma_ext()
    locks = _splitk.locks(torch.device(DEV))
    bf, hf = torch.bfloat16, torch.float16
    cases = [(2112, 7168, 128, bf, (128, 4, 4, 3, 64)), (2112, 7168, 100, bf, (128, 2, 4, 3, 64)),
             (520, 2048, 200, hf, (64, 6, 8, 3, 0)), (1000, 4096, 300, bf, (256, 4, 3, 3, 64)),
             (600, 2048, 130, bf, (128, 4, 4, 3, 192)), (300, 3072, 33, hf, (128, 8, 4, 3, 0)),
             (2048, 7168, 1000, bf, (256, 2, 3, 3, 128)), (2112, 7168, 1000, bf, (176, 2, 3, 3, 192, 4)),
             (2112, 7168, 1024, hf, (176, 2, 4, 3, 192, 3)), (700, 3072, 300, bf, (176, 4, 3, 3, 192, 4))]
    for n, k, m, dt, cfg in cases:
        packed, w = _layer(n, k, 128, True, torch.float16 if dt == torch.float16 else torch.bfloat16, seed=n + m)
        x = _x(m, k, dt, m)
        b = torch.randn(n, device=DEV).to(dt) if m % 2 == 0 else None
        pair = ops.cuda_wgmma(x, packed, b, cfg, pdl=False)
        assert_matches(pair, x, w, b, f"pair reduction {n}x{k} M={m} {cfg}")
        last = ops.cuda_wgmma(x, packed, b, cfg[:3] + (1,) + cfg[4:], pdl=False)
        assert torch.allclose(pair.float(), last.float(), rtol=1e-2, atol=1e-2), f"{n}x{k} M={m} {cfg}: pair vs last"
        with_pdl = ops.cuda_wgmma(x, packed, b, cfg, pdl=True)
        assert torch.equal(with_pdl, pair), f"{n}x{k} M={m} {cfg}: PDL changed bits"
        if cfg[0] == 176:  # the same k-steps in the same order either way
            other = ops.cuda_wgmma(x, packed, b, cfg[:5] + (7 - cfg[5],), pdl=False)
            assert torch.equal(other, pair), f"{n}x{k} M={m} {cfg}: one A buffer and half-superblock ones differ"
        assert int(locks.abs().sum()) == 0


def test_wgmma_tma_store_epilogue():
    """An unsplit tile is stored by one TMA bulk tensor store (stmatrix.trans into shared memory first) where
    out and its row stride are 16-byte aligned, else by the threads as before: the same bits either way
    (64- and 128-row CTAs, with and without the producer warpgroup, ragged N and M, bias, bf16 / fp16;
    192-row CTAs always take the threads' store, as does a last token tile shifted back to end at M, here at M =
    1000, 300 and 70), and neither writes past the output's columns."""
    C = _wgmma_ext()
    locks = _splitk.locks(torch.device(DEV))
    cases = [(2112, 7168, 1024, torch.bfloat16, (256, 1, 3, 0, 64, 0)),
             (2112, 7168, 1000, torch.bfloat16, (256, 1, 3, 0, 128, 1)),
             (1000, 2048, 300, torch.float16, (128, 1, 4, 0, 128, 0)),
             (520, 1024, 70, torch.bfloat16, (64, 1, 8, 0, 128, 0)),
             (600, 2048, 130, torch.bfloat16, (128, 1, 4, 0, 192, 0))]
    for n, k, m, dt, cfg in cases:
        packed, w = _layer(n, k, 128, True, torch.float16 if dt == torch.float16 else torch.bfloat16, seed=n + m)
        x = _x(m, k, dt, m)
        b = torch.randn(n, device=DEV).to(dt)

        def run(out):
            C.w4a16_wgmma(out, x, packed.qweight, packed.scales, packed.zeros, b, 128, locks, *cfg, 1)
            return out

        dense = run(torch.empty(m, n, device=DEV, dtype=dt))  # row stride n: 16-byte aligned here
        assert (n * 2) % 16 == 0
        assert_matches(dense, x, w, b, f"TMA store {n}x{k} M={m} {cfg}")
        for pad in (4, 8):  # row stride (n + 4) * 2 bytes: the threads' store; (n + 8) * 2: TMA into a view
            wide = torch.full((m, n + pad), 7.0, device=DEV, dtype=dt)
            run(wide[:, :n])
            assert torch.equal(wide[:, :n], dense), f"{n}x{k} M={m} {cfg} pad {pad}: the two stores differ"
            assert bool((wide[:, n:] == 7.0).all()), f"{n}x{k} M={m} {cfg} pad {pad}: wrote past column N"
    assert int(locks.abs().sum()) == 0


def test_refusals_and_public_op():
    C = _ext()
    n, k = 256, 1024
    packed, w = _layer(n, k, seed=4)
    locks = _splitk.locks(torch.device(DEV))
    x = _x(40, k, torch.bfloat16, 2)
    sup = lambda xx, *cfg: C.w4a16_gemm_supported(xx, packed.qweight, packed.scales, packed.zeros, 128, locks, *cfg)  # noqa: E731
    assert sup(x) == 0
    assert sup(x, 8, 64, 1, 6) == 0
    assert sup(x, 8, 48, 1, 6) == 6  # (8 warps, 6 token tiles, 6 stages) is not compiled
    assert sup(x, 8, 64, 99, 6) == 6  # more splits than superblocks
    xs = torch.randn(40, k + 4, device=DEV).to(torch.bfloat16)[:, :k]  # row stride % 8 != 0
    assert sup(xs) == 5
    assert not ops.cuda_gemm_supported(xs, packed)
    # the public op with backend="cuda_gemm" is the same launch
    y = ops.w4a16_linear(x, packed, backend="cuda_gemm")
    assert torch.equal(y, ops.cuda_gemm(x, packed))
    with pytest.raises(ValueError, match="cuda_gemm_supported"):
        ops.w4a16_linear(xs, packed, backend="cuda_gemm")
    # N % 4 != 0: the 4-byte pieces of a group's scale row would be misaligned
    p258, _ = _layer(258, k, seed=6)
    assert C.w4a16_gemm_supported(x, p258.qweight, p258.scales, p258.zeros, 128, locks) == 5
    # groups of 64 are refused by the kernel and by the support test
    p64, w64 = _layer(n, k, 64, True, seed=5)
    assert not ops.cuda_gemm_supported(x, p64)
    assert C.w4a16_gemm_supported(x, p64.qweight, p64.scales, p64.zeros, 64, locks) == 4


def test_auto_dispatch_on_measured_shapes():
    """Past 16 rows the many-row class takes the decode kernels in blocks of 16 rows ("cuda") up to
    _CUDA_BLOCKS_MAX_M, then this GEMM up to _CUDA_GEMM_MAX_M; the few-row class neither. The GEMM itself,
    forced, at M = 24 / 32."""
    _ext()
    big, w = _layer(7168, 16384, seed=11)
    blocks_max, gemm_max = ops._CUDA_BLOCKS_MAX_M.get("many", 0), ops._CUDA_GEMM_MAX_M.get("many", 0)
    for m in (24, 32):
        x = _x(m, 16384, torch.bfloat16, m)
        want = "cuda" if m <= blocks_max else ("cuda_gemm" if m <= gemm_max else None)
        if want is not None:
            assert ops.w4a16_backend(x, big) == want, m
        assert_matches(ops.w4a16_linear(x, big, backend="cuda_gemm"), x, w, None, f"cuda_gemm M={m} 7168x16384")
    assert ops.w4a16_backend(_x(16, 16384, torch.bfloat16, 1), big) == "cuda"
    # the wgmma GEMM's 64-token tile from M = 33 on (session 14)
    assert ops.w4a16_backend(_x(33, 16384, torch.bfloat16, 1), big) not in ("cuda_gemm", "cuda")
    few, _ = _layer(2112, 7168, seed=12)
    assert ops.w4a16_backend(_x(24, 7168, torch.bfloat16, 2), few) not in ("cuda_gemm", "cuda")


def test_wgmma_auto_dispatch_on_measured_shapes():
    """_CUDA_WGMMA_M: each shape class takes the wgmma GEMM inside its M range and not outside it, nor inside
    its _CUDA_WGMMA_GAP range (few rows: dequantize + cuBLAS there) unless the paired config applies
    (_CUDA_WGMMA_PAIRED, on a GPU of 132 SMs: 2816x7168 at M = 545 .. 768, 2048x7168 at M = 769 .. 1024); the wide
    config (_CUDA_WGMMA_WIDE) on 2112x7168 where its grid fills the GPU."""
    _wgmma_ext()
    lo, hi = ops._CUDA_WGMMA_GAP["few"]
    assert 256 < lo <= hi < 1024 and set(ops._CUDA_WGMMA_GAP) == {"few"}
    cases = [((7168, 16384), [(33, True), (50, True), (700, True), (1024, True), (32, False), (1025, False)]),
             ((24576, 1536), [(32, False), (33, True), (40, True), (300, True), (512, True), (700, True), (1024, True),
                              (1025, False)]),
             ((2112, 7168), [(32, False), (33, True), (64, True), (256, True), (lo - 1, True), (lo, False),
                             (700, False), (hi, False), (hi + 1, True), (1024, True), (1025, False)])]
    for (n, k), ms in cases:
        packed, w = _layer(n, k, seed=n + 1)
        for m, wg in ms:
            x = _x(m, k, torch.bfloat16, m)
            backend = ops.w4a16_backend(x, packed)
            assert (backend == "cuda_wgmma") == wg, f"M={m} {n}x{k}: {backend}"
            if n == 2112 and lo <= m <= hi:
                assert backend == "dequant_cublas", f"M={m} {n}x{k}: {backend}"
            if m in (50, 300, 33, 40, 256, 700, hi + 1):
                assert_matches(ops.w4a16_linear(x, packed), x, w, None, f"auto M={m} {n}x{k} ({backend})")
    if torch.cuda.get_device_properties(DEV).multi_processor_count == 132:
        for n, ms in ((2816, (600, 768)), (2048, (1000, 1024))):
            packed, w = _layer(n, 7168, seed=n + 2)
            for m in ms:
                x = _x(m, 7168, torch.bfloat16, m)
                assert ops._wgmma_paired_config(x, packed) == ops._CUDA_WGMMA_PAIRED["few"][2], f"M={m} {n}x7168"
                assert ops.w4a16_backend(x, packed) == "cuda_wgmma", f"M={m} {n}x7168"
                assert_matches(ops.w4a16_linear(x, packed), x, w, None, f"paired M={m} {n}x7168")
        # _CUDA_WGMMA_WIDE: 192-row x 176-token CTAs over two K splits where the few row runs and that grid fills the
        # GPU (2112x7168 at M = 936 .. 1024: 11 x 6 x 2 = 132 CTAs); not below (M = 700: 110 CTAs, in the gap anyway;
        # M = 256: 44), nor on N % 192 != 0 (2048: paired)
        packed, w = _layer(2112, 7168, seed=2114)
        for m, wide in ((hi + 1, True), (1024, True), (700, False), (256, False)):
            x = _x(m, 7168, torch.bfloat16, m + 1)
            got = ops._wgmma_wide_config(x, packed)
            assert got == (ops._CUDA_WGMMA_WIDE["few"][2] if wide else None), f"M={m} 2112x7168: {got}"
            if wide:
                assert ops.w4a16_backend(x, packed) == "cuda_wgmma", f"M={m} 2112x7168"
                y = ops.w4a16_linear(x, packed)
                assert_matches(y, x, w, None, f"wide M={m} 2112x7168")
                assert torch.equal(y, ops.cuda_wgmma(x, packed, None, ops._CUDA_WGMMA_WIDE["few"][2])), f"M={m}"
        assert ops._wgmma_wide_config(_x(1024, 7168, torch.bfloat16, 3), _layer(2048, 7168, seed=5)[0]) is None


def test_wgmma_64_and_192_rows():
    """64-row CTAs (the warpgroups take the low / high k-steps of every superblock over the same rows
    and tokens, and sum their tiles) against the reference and against 128-row CTAs with the same
    tokens, stages and K split (the same products summed in another order: close, not bit-equal);
    192-row CTAs (three warpgroups of 64 rows, 12 warps) bit-equal to 128-row ones (each output the
    same wgmma chain and split-order sum). Ragged N (tiles past N), ragged M (tokens past M), both
    reductions where they fit, bias, fp16 x with fp32 scales; the spread and last-arrival sums give the
    same bits; then the 2112x7168 M = 1024 grid of one full wave (33 row tiles x 4 token tiles)."""
    _wgmma_ext()
    cases = [(300, 2048, 200, torch.bfloat16, torch.bfloat16, (128, 3, 4)),
             (1000, 4096, 300, torch.float16, torch.float32, (256, 3, 3)),
             (2112, 7168, 130, torch.bfloat16, torch.float16, (128, 1, 4))]
    for n, k, m, dt, sdt, cfg in cases:
        packed, w = _layer(n, k, 128, True, sdt, seed=n + m)
        x = _x(m, k, dt, m)
        b = torch.randn(n, device=DEV).to(dt)
        tall = ops.cuda_wgmma(x, packed, b, cfg + (1, 128))
        half = ops.cuda_wgmma(x, packed, b, cfg + (1, 64))
        want = assert_matches(half, x, w, b, f"64 rows {n}x{k} M={m} {cfg}")
        diff = ((half.float() - tall.float()).norm() / want.norm()).item()
        assert diff <= 2e-3, f"{n}x{k} M={m} {cfg}: 64 and 128 rows differ by {diff:.2e}"
        if cfg[1] > 1:
            assert torch.equal(ops.cuda_wgmma(x, packed, b, cfg + (2, 64)), half), f"{n}x{k} M={m}: spread"
        if cfg[0] == 128:
            for reduce in (1, 2) if cfg[1] > 1 else (1,):
                wide = ops.cuda_wgmma(x, packed, b, cfg + (reduce, 192))
                assert torch.equal(wide, tall), f"{n}x{k} M={m} {cfg} reduce={reduce}: 192 and 128 rows differ"
    packed, w = _layer(2112, 7168, seed=13)
    x = _x(1024, 7168, torch.bfloat16, 14)
    assert_matches(ops.cuda_wgmma(x, packed, None, (256, 1, 3, 0, 64)), x, w, None, "64 rows 2112x7168 M=1024")
    assert int(_splitk.locks(torch.device(DEV)).abs().sum()) == 0


def test_wgmma_alternate_superblocks():
    """Mode 2 of the sixth config field (64-row CTAs, an even number of stages): the two warpgroups take
    alternate superblocks of the CTA's K range, all k-steps each, instead of halves of every superblock.
    Against the fp32 reference and the k-step split (the same products summed in another order: close, not
    bit-equal); K splits of odd length and of one superblock (the second warpgroup has none), every reduction
    (last arrival, spread, pairs), a shifted last token tile, ragged N, bias, fp16 / bf16, zero points or none;
    PDL changes no bit, and the counters are left zeroed."""
    _wgmma_ext()
    locks = _splitk.locks(torch.device(DEV))
    bf, hf = torch.bfloat16, torch.float16
    cases = [(2112, 7168, 128, bf, False, (128, 4, 4, 3)), (2112, 7168, 100, hf, True, (128, 4, 6, 3)),
             (300, 2176, 200, bf, True, (128, 2, 4, 1)), (256, 1024, 130, hf, False, (128, 8, 6, 2)),
             (1000, 4096, 300, bf, True, (128, 1, 4, 0)), (64, 3072, 33, bf, False, (128, 3, 4, 1))]
    for n, k, m, dt, asym, cfg in cases:
        packed, w = _layer(n, k, 128, asym, torch.float16 if dt == hf else bf, seed=n + m + 7)
        x = _x(m, k, dt, m + 3)
        b = torch.randn(n, device=DEV).to(dt) if m % 2 == 0 else None
        what = f"alternate superblocks {n}x{k} M={m} {cfg}"
        alt = ops.cuda_wgmma(x, packed, b, cfg + (64, 2), pdl=False)
        want = assert_matches(alt, x, w, b, what)
        halves = ops.cuda_wgmma(x, packed, b, (cfg[0], cfg[1], 4, cfg[3], 64, 0), pdl=False)  # 4 stages compiled
        diff = ((alt.float() - halves.float()).norm() / want.norm()).item()
        assert diff <= 2e-3, f"{what}: differs from the k-step split by {diff:.2e}"
        assert torch.equal(ops.cuda_wgmma(x, packed, b, cfg + (64, 2), pdl=True), alt), f"{what}: PDL changed bits"
        assert int(locks.abs().sum()) == 0


def test_wgmma_pdl_chain_in_a_graph():
    """Two wgmma GEMMs launched with PDL, the second reading the first's output, captured in a CUDA
    graph and replayed on fresh x: the second must wait for the first (griddepcontrol.wait before x),
    with and without a K split (spread and last-arrival)."""
    _wgmma_ext()
    p1, w1 = _layer(1024, 2048, seed=21)
    p2, w2 = _layer(512, 1024, seed=22)
    for cfg1, cfg2 in [((128, 4, 4, 2), (128, 2, 4, 1)), ((128, 1, 4, 0), (64, 8, 8, 2))]:
        x = _x(100, 2048, torch.bfloat16, 30)
        y1 = ops.cuda_wgmma(x, p1, None, cfg1, pdl=True)
        ops.cuda_wgmma(y1, p2, None, cfg2, pdl=True)  # warm up outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y1 = ops.cuda_wgmma(x, p1, None, cfg1, pdl=True)
            y2 = ops.cuda_wgmma(y1, p2, None, cfg2, pdl=True)
        for i in range(3):
            x.copy_(_x(100, 2048, torch.bfloat16, 31 + i))
            g.replay()
            torch.cuda.synchronize()
            assert_matches(y1, x, w1, None, f"PDL chain, first GEMM, replay {i}")
            assert_matches(y2, y1, w2, None, f"PDL chain, second GEMM on the first's output, replay {i}")
        assert int(_splitk.locks(torch.device(DEV)).abs().sum()) == 0
