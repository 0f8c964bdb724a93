"""CPU tests of the W4A16 / W8A16 packed layout and op (reference backend).

The packer's output, decoded by ``dequantize_w4a16``, must equal ``dequantize_canonical`` (the
formula on the unpacked integers) bit for bit, and both must equal an explicit per-group loop
written here; the op is checked against float64 products and through ``torch.library.opcheck``.
"""

import subprocess
import sys

import pytest
import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref

BITS = [4, 8]
SYM = [True, False]
GROUPS = [32, 64, 128, -1]
# (N, K): odd N (576, 1536 + 576) and a K that is not a multiple of the 128-column superblock.
SHAPES = [(576, 384), (2112, 128), (40, 320)]
ACT_GROUPS = [32, 128]


def random_canonical(n, k, group, bits, sym, seed, act_order_bounds=None, scale_dtype=torch.float32):
    """Fresh canonical data: q, zeros, scales, g_idx (act-order: a random permutation of the
    group labels per row range, so every shard has its own order)."""
    gen = torch.Generator().manual_seed(seed)
    g = k if group == -1 else group
    num_groups = k // g
    q = torch.randint(0, 1 << bits, (n, k), generator=gen, dtype=torch.int32).to(torch.uint8)
    zeros = None if sym else torch.randint(0, 1 << bits, (n, num_groups), generator=gen, dtype=torch.int32)
    scales = (torch.rand(n, num_groups, generator=gen) * 0.02 + 1e-3).to(scale_dtype)
    g_idx = None
    if act_order_bounds is not None:
        g_idx = []
        for r0, r1 in zip(act_order_bounds[:-1], act_order_bounds[1:]):
            labels = torch.arange(k) // g
            g_idx.append((r0, r1, labels[torch.randperm(k, generator=gen)].to(torch.int32)))
    return q, zeros, scales, group, g_idx


def _loop_dequant(q, zeros, scales, group, g_idx, bits):
    """Independent of both modules: explicit loops over row ranges and groups."""
    n, k = q.shape
    out = torch.empty(n, k, dtype=torch.float64)
    ranges = g_idx if g_idx is not None else [(0, n, None)]
    g = k if group == -1 else group
    for r0, r1, gi in ranges:
        labels = (torch.arange(k) // g) if gi is None else gi.long()
        for grp in range(scales.shape[1]):
            cols = (labels == grp).nonzero().flatten()
            z = 2 ** (bits - 1) if zeros is None else zeros[r0:r1, grp : grp + 1].double()
            out[r0:r1, cols] = (q[r0:r1, cols].double() - z) * scales[r0:r1, grp : grp + 1].double()
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("sym", SYM)
@pytest.mark.parametrize("bits", BITS)
def test_pack_round_trip(bits, sym, group, shape):
    n, k = shape
    if group != -1 and k % group:
        pytest.skip("group does not divide K")
    q, z, s, g, g_idx = random_canonical(n, k, group, bits, sym, seed=n + k + group + bits)
    packed = ops.pack_w4a16(q, z, s, g, bits=bits)
    assert packed.qweight.dtype == torch.int32 and packed.qweight.shape == (n, -(-k // (128 if bits == 4 else 64)) * 16)
    canon = ref.dequantize_canonical(q, z, s, g, bits=bits)
    assert torch.equal(ref.dequantize_w4a16(packed), canon)
    assert torch.equal(canon, _loop_dequant(q, z, s, g, None, bits).float())  # exact product, rounded once


@pytest.mark.parametrize("group", ACT_GROUPS)
@pytest.mark.parametrize("sym", SYM)
@pytest.mark.parametrize("bits", BITS)
def test_pack_act_order_two_shards(bits, sym, group):
    n, k = 1536 + 576, 256
    bounds = [0, 1536, n]
    q, z, s, g, g_idx = random_canonical(n, k, group, bits, sym, seed=7 * bits + group, act_order_bounds=bounds)
    assert not torch.equal(g_idx[0][2], g_idx[1][2])
    packed = ops.pack_w4a16(q, z, s, g, bits=bits, g_idx=g_idx)
    assert packed.perm is not None and packed.perm.shape == (2, k) and packed.shard_rows == tuple(bounds)
    canon = ref.dequantize_canonical(q, z, s, g, g_idx, bits=bits)
    assert torch.equal(ref.dequantize_w4a16(packed), canon)
    assert torch.equal(canon, _loop_dequant(q, z, s, g, g_idx, bits).float())


def test_act_order_identity_and_equal_shards_collapse():
    n, k, g = 96, 256, 64
    q, z, s, _, _ = random_canonical(n, k, g, 4, False, seed=3)
    ident = torch.arange(k) // g
    packed = ops.pack_w4a16(q, z, s, g, g_idx=[(0, 40, ident), (40, n, ident.clone())])
    assert packed.perm is None and packed.shard_rows == (0, n)
    perm = ident[torch.randperm(k, generator=torch.Generator().manual_seed(1))]
    three = [(0, 30, perm), (30, 60, perm.clone()), (60, n, ident)]
    packed = ops.pack_w4a16(q, z, s, g, g_idx=three)
    assert packed.shard_rows == (0, 60, n) and packed.perm.shape == (2, k)
    assert torch.equal(ref.dequantize_w4a16(packed), ref.dequantize_canonical(q, z, s, g, three))


@pytest.mark.parametrize("sym", SYM)
def test_tensors_round_trip(sym):
    bounds = [0, 50, 77]
    q, z, s, g, g_idx = random_canonical(77, 128, 32, 4, sym, seed=11, act_order_bounds=bounds)
    packed = ops.pack_w4a16(q, z, s, g, g_idx=g_idx)
    tensors = packed.tensors()
    assert ("zeros" in tensors) != sym and "perm" in tensors
    again = ops.W4A16Weights.from_tensors(tensors)
    assert (again.bits, again.group_size, again.n, again.k, again.shard_rows) == (4, 32, 77, 128, tuple(bounds))
    assert torch.equal(ref.dequantize_w4a16(again), ref.dequantize_w4a16(packed))


def test_scale_dtype_narrowing_is_lossless():
    q, z, s, g, _ = random_canonical(64, 128, 64, 4, False, seed=5)
    exact_bf16 = s.to(torch.bfloat16).float()
    assert ops.pack_w4a16(q, z, exact_bf16, g).scales.dtype == torch.bfloat16
    assert ops.pack_w4a16(q, z, s, g).scales.dtype == torch.float32  # random fp32: no narrow type fits
    assert ops.pack_w4a16(q, z, s.half(), g).scales.dtype == torch.float16
    with pytest.raises(ValueError, match="scale_dtype"):
        ops.pack_w4a16(q, z, s, g, scale_dtype=torch.bfloat16)
    assert torch.equal(ops.pack_w4a16(q, z, s, g, scale_dtype=torch.float32).scales, s.t())


def test_pack_rejects_bad_input():
    q, z, s, g, _ = random_canonical(32, 128, 32, 4, False, seed=9)
    with pytest.raises(ValueError, match="bits"):
        ops.pack_w4a16(q, z, s, g, bits=3)
    with pytest.raises(ValueError, match="q: values"):
        ops.pack_w4a16(q.to(torch.int32) + 16, z, s, g)
    with pytest.raises(TypeError, match="q:"):
        ops.pack_w4a16(q.float(), z, s, g)
    with pytest.raises(ValueError, match="scales"):
        ops.pack_w4a16(q, z, s[:, :2], g)
    with pytest.raises(ValueError, match="group_size"):
        ops.pack_w4a16(q, z, s, 48)
    bad = (torch.arange(128) // 32).clone()
    bad[0] = 1  # group 0 has 31 columns, group 1 has 33
    good = torch.arange(128) // 32
    with pytest.raises(ValueError, match="exactly group_size"):
        ops.pack_w4a16(q, z, s, g, g_idx=[(0, 32, bad)])
    with pytest.raises(ValueError, match="row range"):
        ops.pack_w4a16(q, z, s, g, g_idx=[(0, 10, good), (12, 32, good)])


MS = [1, 5]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act_order", [False, True])
@pytest.mark.parametrize("M", MS)
def test_linear_reference_backend(M, act_order, dtype):
    n, k, group = 96, 256, 64
    bounds = [0, 64, n] if act_order else None
    q, z, s, g, g_idx = random_canonical(n, k, group, 4, False, seed=M, act_order_bounds=bounds)
    packed = ops.pack_w4a16(q, z, s, g, g_idx=g_idx)
    gen = torch.Generator().manual_seed(M + 100)
    x = torch.randn(2, M, k + 8, generator=gen).to(dtype)[..., 3 : 3 + k]  # strided rows
    bias = torch.randn(n, generator=gen)
    assert ops.w4a16_backend(x, packed) == "reference"
    y = ops.w4a16_linear(x, packed, bias)
    w = _loop_dequant(q, z, s, g, g_idx, 4)
    want = x.double() @ w.T + bias.double()
    assert y.shape == (2, M, n) and y.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    assert ((y.double() - want).norm() / want.norm()).item() < tol


def test_linear_rejects_bad_input():
    q, z, s, g, _ = random_canonical(32, 128, 32, 4, True, seed=2)
    packed = ops.pack_w4a16(q, z, s, g)
    with pytest.raises(ValueError, match="x:"):
        ops.w4a16_linear(torch.randn(3, 64), packed)
    with pytest.raises(ValueError, match="stride"):
        ops.w4a16_linear(torch.randn(128, 3).t(), packed)
    with pytest.raises(ValueError, match="bias"):
        ops.w4a16_linear(torch.randn(3, 128), packed, torch.randn(31))
    with pytest.raises(TypeError, match="triton"):
        ops.w4a16_linear(torch.randn(3, 128), packed, backend="triton")
    with pytest.raises(ValueError, match="backend"):
        ops.w4a16_linear(torch.randn(3, 128), packed, backend="cuda")


@pytest.mark.parametrize("act_order", [False, True])
def test_opcheck_reference(act_order):
    bounds = [0, 40, 72] if act_order else None
    q, z, s, g, g_idx = random_canonical(72, 128, 32, 4, False, seed=4, act_order_bounds=bounds)
    p = ops.pack_w4a16(q, z, s, g, g_idx=g_idx)
    x = torch.randn(3, 128, dtype=torch.bfloat16)
    args = (x, p.qweight, p.scales, p.zeros, p.perm, p.row_bounds, torch.randn(72), p.bits, p.group_size,
            p.n, p.k, list(p.shard_rows), "reference")
    torch.library.opcheck(torch.ops.qlinear.w4a16_mm.default, args)


def test_import_does_not_load_triton():
    code = "import sys, qlinear.ops.w4a16, qlinear.reference.w4a16; assert 'triton' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_auto_reg_table(monkeypatch):
    """_CUDA_REG_AUTO: the M == 1 entry first, then the tile entry; None without an entry and for
    groups under 128 (their register tile is fixed by the launcher)."""

    def packed(n, k, group):
        q = torch.randint(0, 16, (n, k), dtype=torch.int32)
        s = torch.rand(n, k // group) + 0.5
        return ops.pack_w4a16(q, None, s, group)

    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {("many", 0): (1, 2, 8, 0), ("many", 2): (2, 1, 4, 0)})
    big = packed(3200, 2304, 128)
    assert ops._cuda_shape_class(big.n, big.k) == "many"
    assert ops._cuda_auto_reg(torch.randn(1, 2304), big) == (1, 2, 8, 0)
    assert ops._cuda_auto_reg(torch.randn(4, 2304), big) is None
    # tiles 4 (M 2..4) before tiles 1 (M 2..8)
    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {("many", 4): (1, 2, 4, 0), ("many", 1): (4, 1, 8, 0),
                                                ("many", 2): (2, 1, 4, 0)})
    assert ops._cuda_auto_reg(torch.randn(1, 2304), big) == (1, 2, 4, 0)
    assert ops._cuda_auto_reg(torch.randn(4, 2304), big) == (1, 2, 4, 0)
    assert ops._cuda_auto_reg(torch.randn(5, 2304), big) == (4, 1, 8, 0)
    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {("many", 0): (1, 2, 8, 0), ("many", 2): (2, 1, 4, 0)})
    assert ops._cuda_auto_reg(torch.randn(12, 2304), big) == (2, 1, 4, 0)
    assert ops._cuda_auto_reg(torch.randn(1, 2304), packed(3200, 2304, 64)) is None
    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {})
    assert ops._cuda_auto_reg(torch.randn(1, 2304), big) is None


def test_cuda_auto_reg_fold_only_with_zero_points(monkeypatch):
    """A table entry's zero-point fold (5th element) is kept for layers with zero points and
    dropped for symmetric ones (the fold entries were measured on asymmetric layers; symmetric ones
    ran slower with it)."""
    q = torch.randint(0, 16, (3200, 2304), dtype=torch.int32)
    s = torch.rand(3200, 18) + 0.5
    sym = ops.pack_w4a16(q, None, s, 128)
    asym = ops.pack_w4a16(q, torch.randint(0, 16, (3200, 18), dtype=torch.int32), s, 128)
    assert sym.zeros is None and asym.zeros is not None
    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {("many", 0): (1, 2, 4, 0, 1), ("many", 2): (4, 1, 8, 2, 0)})
    x1, x16 = torch.randn(1, 2304), torch.randn(16, 2304)
    assert ops._cuda_auto_reg(x1, asym) == (1, 2, 4, 0, 1)
    assert ops._cuda_auto_reg(x1, sym) == (1, 2, 4, 0)
    assert ops._cuda_auto_reg(x16, sym) == (4, 1, 8, 2, 0)  # fold 0: unchanged


def test_cuda_xs_table_ahead_of_the_register_table(monkeypatch):
    """_CUDA_XS_AUTO's entry where the x-staged kernel applies (_cuda_xs_ok), else _CUDA_REG_AUTO's for
    the same key (its fallback); keys looked up as _CUDA_REG_AUTO's. On the CPU it never applies."""
    q = torch.randint(0, 16, (24576, 1536), dtype=torch.int32)
    packed = ops.pack_w4a16(q, None, torch.rand(24576, 12) + 0.5, 128)
    assert ops._cuda_shape_class(packed.n, packed.k) == "short"
    monkeypatch.setattr(ops, "_CUDA_XS_AUTO", {("short", 2): (1, 2, 12, 3)})
    monkeypatch.setattr(ops, "_CUDA_REG_AUTO", {("short", 2): (2, 1, 2, 2), ("short", 1): (4, 1, 4, 2)})
    x16, x8 = torch.randn(16, 1536), torch.randn(8, 1536)
    assert not ops._cuda_xs_ok(x16, packed)
    assert ops._cuda_auto_reg(x16, packed) == (2, 1, 2, 2)
    monkeypatch.setattr(ops, "_cuda_xs_ok", lambda x, p: True)
    assert ops._cuda_auto_reg(x16, packed) == (1, 2, 12, 3)
    assert ops._cuda_auto_reg(x8, packed) == (4, 1, 4, 2)  # no x-staged entry at one token tile


# Per split-K GEMM backend: M of the probe x, its support test, its auto-dispatch bound (name and a
# value that would take every M), its op, and malformed launch configs.
_GEMM_OFF_CUDA = {
    "cuda_gemm": (24, "cuda_gemm_supported", "_CUDA_GEMM_MAX_M", {"few": 256, "many": 256, "short": 256},
                  "cuda_gemm", ((8, 64, 0), (8, 64, 0, 4, 1), (8, -64, 0, 4))),
    "cuda_wgmma": (100, "cuda_wgmma_supported", "_CUDA_WGMMA_M",
                   {"few": (1, 4096), "many": (1, 4096), "short": (1, 4096)},
                   "cuda_wgmma", ((128, 0), (8, 128, 0, 4, 0, 0, 0), (128, 1, 4, 0, 64, -1), (128, -1, 4), (128, 1, 4, -1), (128, 1, 4, 0, -64))),
}


@pytest.mark.parametrize("backend", sorted(_GEMM_OFF_CUDA))
def test_split_k_gemm_support_and_dispatch_off_cuda(monkeypatch, backend):
    """The split-K GEMM's support test is false off CUDA (the auto choice stays "reference" whatever
    its dispatch bound says), a forced backend that does not apply falls back to the auto choice, and
    a malformed launch config is refused before anything is launched."""
    m, supported, bound_attr, bound, run, bad_configs = _GEMM_OFF_CUDA[backend]
    q = torch.randint(0, 16, (256, 1024), dtype=torch.int32)
    packed = ops.pack_w4a16(q, None, torch.rand(256, 8) + 0.5, 128)
    x = torch.randn(m, 1024, dtype=torch.bfloat16)
    assert not getattr(ops, supported)(x, packed)
    monkeypatch.setattr(ops, bound_attr, bound)
    assert ops.w4a16_backend(x, packed) == "reference"
    monkeypatch.setenv("QLINEAR_W4A16_BACKEND", backend)
    assert ops.w4a16_backend(x, packed) == "reference"
    for bad in bad_configs:
        with pytest.raises(ValueError, match="config"):
            getattr(ops, run)(x, packed, None, bad)
    with pytest.raises(ValueError, match=supported):
        ops.w4a16_linear(x, packed, backend=backend)


class _FakeExt:
    """Stands in for torch.ops.qlinear_C: records each GEMM op call's trailing ints and output."""

    def __init__(self):
        self.calls = []

    def _record(self, name, out, x, qweight, scales, zeros, bias, group_size, counters, *cfg):
        self.calls.append((name, out.shape, x.shape, group_size, counters.dtype, cfg))
        return 0

    def w4a16_gemm(self, *args):
        return self._record("w4a16_gemm", *args)

    def w4a16_wgmma(self, *args):
        return self._record("w4a16_wgmma", *args)


@pytest.mark.parametrize("family", ["gemm", "wgmma"])
def test_cuda_gemm_ops_pass_their_configs(monkeypatch, family):
    """The Python glue of the two split-K GEMM ops (no GPU: a fake extension records the call): an
    explicit config goes through as given, None takes the first row of the shape class's auto entry
    whose max_m holds M, else the default (all zeros for wgmma: the launcher's choice), and M = 0
    launches nothing."""
    pytest.importorskip("triton")  # the split-K counters live in qlinear.kernels._splitk
    fake = _FakeExt()
    monkeypatch.setattr(ops, "_cuda_ext_ops", lambda: fake)
    q = torch.randint(0, 16, (3200, 2304), dtype=torch.int32)
    packed = ops.pack_w4a16(q, None, torch.rand(3200, 18) + 0.5, 128)
    assert ops._cuda_shape_class(packed.n, packed.k) == "many"
    x = torch.randn(40, 2304, dtype=torch.bfloat16)
    if family == "gemm":
        run, name, explicit, auto_attr, default = ops.cuda_gemm, "w4a16_gemm", (8, 64, 3, 6), "_CUDA_GEMM_AUTO", \
            ops._CUDA_GEMM_CONFIG
        auto_entry = (4, 32, 2, 6)
    else:
        run, name, explicit, auto_attr, default = ops.cuda_wgmma, "w4a16_wgmma", (128, 3, 5), "_CUDA_WGMMA_AUTO", \
            (0, 0, 0)
        auto_entry = (256, 1, 3)
    y = run(x, packed, None, explicit)
    assert y.shape == (40, 3200) and y.dtype == x.dtype
    other = tuple(v + 1 for v in auto_entry)
    monkeypatch.setattr(ops, auto_attr, {"many": ((39, other), (40, auto_entry), (64, other))})
    run(x, packed)  # M = 40: the second row
    monkeypatch.setattr(ops, auto_attr, {"many": ((39, other),)})
    run(x, packed)  # no row holds M = 40: the default
    monkeypatch.setattr(ops, auto_attr, {})
    run(x, packed)
    assert run(x[:0], packed).shape == (0, 3200)
    # wgmma: a 3-field config padded with reduce = 0, rows = 0 and producer = 0, then pdl (off: no sm_90
    # device here)
    pad = (lambda c: tuple(c) + (0,) * (6 - len(c)) + (0,)) if family == "wgmma" else tuple
    assert [c[5] for c in fake.calls] == [pad(explicit), pad(auto_entry), pad(default), pad(default)]
    assert all(c[0] == name and c[1] == (40, 3200) and c[3] == 128 and c[4] == torch.int32 for c in fake.calls)
    if family == "wgmma":
        # a layer without zero points takes the symmetric override of the row its M falls in, where there is one
        fake.calls.clear()
        sym_entry = (128, 4, 4, 3, 64)
        monkeypatch.setattr(ops, auto_attr, {"many": ((39, other), (64, auto_entry))})
        monkeypatch.setattr(ops, "_CUDA_WGMMA_AUTO_SYM", {"many": {64: sym_entry}})
        run(x, packed)
        asym = ops.pack_w4a16(q, torch.randint(0, 16, (3200, 18), dtype=torch.int32), torch.rand(3200, 18) + 0.5, 128)
        run(x, asym)
        monkeypatch.setattr(ops, "_CUDA_WGMMA_AUTO_SYM", {"many": {39: sym_entry}})
        run(x, packed)  # an override of another row: the common one
        monkeypatch.setattr(ops, "_CUDA_WGMMA_AUTO_SYM", {"few": {64: sym_entry}})
        run(x, packed)  # no override for "many": the common one
        assert [c[5] for c in fake.calls] == [pad(sym_entry), pad(auto_entry), pad(auto_entry), pad(auto_entry)]


def test_wgmma_symmetric_overrides_name_existing_rows():
    """Each _CUDA_WGMMA_AUTO_SYM override names a max_m bound of its class's _CUDA_WGMMA_AUTO rows (a later
    edit of a bound must not leave an override that silently never applies), and is what was measured
    faster for symmetric layers: the K split summed in pairs (reduce 3, an even split count)."""
    for cls, overrides in ops._CUDA_WGMMA_AUTO_SYM.items():
        bounds = [m for m, _ in ops._CUDA_WGMMA_AUTO[cls]]
        for m, sym in overrides.items():
            assert m in bounds, (cls, m, bounds)
            assert len(sym) >= 4 and sym[3] == 3 and sym[1] % 2 == 0, (cls, m, sym)


def test_wgmma_gap_inside_its_class_range(monkeypatch):
    """_CUDA_WGMMA_GAP: each gap lies inside its class's _CUDA_WGMMA_M range (a gap outside it would silently do
    nothing), and _wgmma_takes says yes inside the range, no in the gap and past the range's ends."""
    for cls, (lo, hi) in ops._CUDA_WGMMA_GAP.items():
        wg_lo, wg_hi = ops._CUDA_WGMMA_M[cls]
        assert wg_lo < lo <= hi < wg_hi, (cls, (lo, hi), (wg_lo, wg_hi))
        for m, want in [(wg_lo - 1, False), (wg_lo, True), (lo - 1, True), (lo, False), ((lo + hi) // 2, False),
                        (hi, False), (hi + 1, True), (wg_hi, True), (wg_hi + 1, False)]:
            assert ops._wgmma_takes(cls, m) == want, (cls, m)
    monkeypatch.setattr(ops, "_CUDA_WGMMA_M", {"few": (33, 1024)})
    monkeypatch.setattr(ops, "_CUDA_WGMMA_GAP", {})
    assert ops._wgmma_takes("few", 600) and not ops._wgmma_takes("many", 600)


def test_wgmma_paired_config_bounds(monkeypatch):
    """_wgmma_paired_config: the paired config only for N % 128 == 0, inside its class's M range, and where the
    64-row grid it replaces (N / 64 x M / 256 CTAs) fills 7/8 to all of the SMs (132 here, the H200's; 114 an H100
    PCIe's); w4a16_backend then takes the wgmma GEMM inside _CUDA_WGMMA_GAP too."""
    from types import SimpleNamespace

    lo, hi, cfg = ops._CUDA_WGMMA_PAIRED["few"]
    assert set(ops._CUDA_WGMMA_PAIRED) == {"few"} and 256 < lo <= hi <= ops._CUDA_WGMMA_M["few"][1]
    assert cfg[1] == 2 and cfg[3] == 3  # two K splits summed in pairs: one CTA per 64-row CTA replaced
    for sms, n, k, m, want in [(132, 2048, 7168, 1024, True), (132, 2048, 7168, 769, True),
                               (132, 2048, 7168, 768, False), (132, 2048, 7168, hi + 1, False),
                               (132, 2112, 7168, 1024, False), (132, 1920, 7168, 1024, True),
                               (132, 1792, 7168, 1024, False), (114, 1792, 7168, 1024, True),
                               (132, 2816, 7168, 768, True), (132, 2816, 7168, lo, True),
                               (132, 2816, 7168, lo - 1, False), (132, 2816, 7168, 769, False),
                               (132, 2048, 1536, 1024, False), (132, 7168, 16384, 1024, False)]:
        props = SimpleNamespace(multi_processor_count=sms)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d, p=props: p)
        got = ops._wgmma_paired_config(torch.empty(m, 0), SimpleNamespace(n=n, k=k))
        assert (got == cfg) if want else got is None, (sms, n, k, m, got)


def test_wgmma_wide_config_bounds(monkeypatch):
    """_wgmma_wide_config: 192-row x 176-token CTAs over two K splits in pairs only for N % 192 == 0, where the
    class's few row runs (inside _CUDA_WGMMA_M, not in _CUDA_WGMMA_GAP) and the grid N / 192 x M / 176 x 2 fills
    7/8 to all of the SMs (132 here, the H200's; 114 an H100 PCIe's); 2112x7168 at M = 936 .. 1024 on 132 SMs."""
    from types import SimpleNamespace

    lo, hi, cfg = ops._CUDA_WGMMA_WIDE["few"]
    gap_lo, gap_hi = ops._CUDA_WGMMA_GAP["few"]
    assert set(ops._CUDA_WGMMA_WIDE) == {"few"} and hi <= ops._CUDA_WGMMA_M["few"][1]
    assert cfg[:2] == (176, 2) and cfg[3] == 3 and cfg[4] == 192  # 176 tokens, two splits in pairs, 192 rows
    for sms, n, k, m, want in [(132, 2112, 7168, 1024, True), (132, 2112, 7168, gap_hi + 1, True),
                               (132, 2112, 7168, gap_hi, False), (132, 2112, 7168, 880, False),
                               (132, 2112, 7168, 1025, False), (132, 2112, 7168, 256, False),
                               (132, 2048, 7168, 1024, False), (132, 2304, 7168, 1024, False),
                               (114, 2112, 7168, 1024, False), (132, 2112, 1536, 1024, False)]:
        props = SimpleNamespace(multi_processor_count=sms)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d, p=props: p)
        got = ops._wgmma_wide_config(torch.empty(m, 0), SimpleNamespace(n=n, k=k))
        assert (got == cfg) if want else got is None, (sms, n, k, m, got)
