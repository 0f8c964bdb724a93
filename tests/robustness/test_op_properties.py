"""Property-based tests of the public ops on the CPU (the paths users without a GPU get).

* ``rms_norm`` / ``fused_add_rms_norm`` (reference backend, through the custom ops and their
  argument / overlap checks) on random strided, offset, permuted views, every accepted dtype,
  out of place, into another view or in place, against the fp64 formula written here, with the
  sentinel memory around every view checked.
* Overlap: two random views of ONE buffer (which may overlap partly, fully, or not at all) are
  either refused with ``ValueError`` before anything is written, or provably disjoint and then
  computed exactly as on separate copies.
* Bad arguments (wrong dtype / shape / device-independent layout) always raise ``TypeError`` or
  ``ValueError`` and write nothing.
* ``per_token_group_quant_fp8`` (reference backend, N-d input, column-major scales) is
  bit-identical to the formula, and ``|x - q * s|`` stays within e4m3's rounding bound.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import _robust_common as rc
from qlinear.ops import fused_add_rms_norm, per_token_group_quant_fp8, rms_norm

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
E4M3 = rc.E4M3


def _view(layout, dtype, seed, magnitude=1.0):
    shape, strides, offset, numel = layout
    return rc.StridedView(rc.sentinel_buffer(numel, torch.float32, seed, magnitude).to(dtype), shape, strides, offset)


# ---------------------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------------------


@st.composite
def _norm_case(draw):
    x_layout = draw(rc.view_layouts(max_lead=3))
    mode = draw(st.sampled_from(["new", "inplace", "view"]))
    return dict(
        x_layout=x_layout,
        out_layout=draw(rc.view_layouts(shape=x_layout[0])) if mode == "view" else None,
        mode=mode,
        dtype=draw(st.sampled_from(DTYPES)),
        seed=draw(st.integers(0, 2**31 - 1)),
        magnitude=10.0 ** draw(st.integers(-3, 2)),
        eps=draw(st.sampled_from([1e-6, 1e-5, 1e-2])),
    )


@rc.property_of("rms_norm op (reference): strided / in-place / out views vs fp64, sentinels")
@given(case=_norm_case())
def test_rms_norm_op(case):
    rc.tally("rms_norm op (reference): strided / in-place / out views vs fp64, sentinels")
    dtype, eps = case["dtype"], case["eps"]
    x = _view(case["x_layout"], dtype, case["seed"], case["magnitude"])
    h = x.view.shape[-1]
    w = (torch.rand(h, generator=rc.gen(case["seed"] + 1)) + 0.5).to(dtype)
    expected = rc.fp64_rms_norm(x.view, w, eps)
    if case["mode"] == "new":
        y = rms_norm(x.view, w, eps, backend="reference")
        assert y.shape == x.view.shape and y.dtype == dtype and y.is_contiguous()
        x.assert_unchanged("x")
    elif case["mode"] == "inplace":
        y = rms_norm(x.view, w, eps, out=x.view, backend="reference")
        assert y is x.view
        x.assert_outside_untouched("x (in place)")
    else:
        out = _view(case["out_layout"], dtype, case["seed"] + 2)
        y = rms_norm(x.view, w, eps, out=out.view, backend="reference")
        assert y is out.view
        out.assert_outside_untouched("out")
        x.assert_unchanged("x")
    rc.close_ulp(y, expected, dtype, "y")


@st.composite
def _fused_case(draw):
    x_layout = draw(rc.view_layouts(max_lead=3))
    return dict(
        x_layout=x_layout,
        r_layout=draw(rc.view_layouts(shape=x_layout[0])),
        dtype=draw(st.sampled_from(DTYPES)),
        seed=draw(st.integers(0, 2**31 - 1)),
        magnitude=10.0 ** draw(st.integers(-3, 1)),
        eps=draw(st.sampled_from([1e-6, 1e-5, 1e-2])),
    )


@rc.property_of("fused_add_rms_norm op (reference): strided views vs fp64, sentinels")
@given(case=_fused_case())
def test_fused_add_rms_norm_op(case):
    rc.tally("fused_add_rms_norm op (reference): strided views vs fp64, sentinels")
    dtype, eps = case["dtype"], case["eps"]
    x = _view(case["x_layout"], dtype, case["seed"], case["magnitude"])
    r = _view(case["r_layout"], dtype, case["seed"] + 1, case["magnitude"])
    w = (torch.rand(x.view.shape[-1], generator=rc.gen(case["seed"] + 2)) + 0.5).to(dtype)
    x0, r0 = x.view.clone(), r.view.clone()
    assert fused_add_rms_norm(x.view, r.view, w, eps, backend="reference") is None
    assert rc.same_bits(r.view, (x0.double() + r0.double()).to(dtype)), "residual != round(x + r)"
    rc.close_ulp(x.view, rc.fp64_rms_norm(r.view, w, eps), dtype, "x (normed)")
    x.assert_outside_untouched("x")
    r.assert_outside_untouched("residual")


@st.composite
def _overlap_case(draw):
    shape = draw(rc.view_layouts(max_lead=2))[0]
    a = draw(rc.view_layouts(shape=shape))
    b = draw(rc.view_layouts(shape=shape))
    # both views in one buffer: b shifted by a random amount, so they may overlap in any way
    shift = draw(st.integers(0, max(a[3], b[3])))
    numel = max(a[3], shift + b[3])
    return dict(a=a, b=b, shift=shift, numel=numel, op=draw(st.sampled_from(["fused", "rms_norm_out"])),
                dtype=draw(st.sampled_from(DTYPES)), seed=draw(st.integers(0, 2**31 - 1)))


def _indices(numel, layout, extra_offset=0):
    shape, strides, offset, _ = layout
    return set(torch.arange(numel).as_strided(shape, strides, offset + extra_offset).reshape(-1).tolist())


@rc.property_of("norm ops: two views of one buffer are refused iff they may overlap (never a racy write)")
@given(case=_overlap_case())
def test_overlapping_views_refused_or_disjoint(case):
    rc.tally("norm ops: two views of one buffer are refused iff they may overlap (never a racy write)")
    dtype, (shape, sa, oa, _), (_, sb, ob, _) = case["dtype"], case["a"], case["b"]
    buf = rc.sentinel_buffer(case["numel"], dtype, case["seed"])
    before = buf.clone()
    a = buf.as_strided(shape, sa, oa)
    b = buf.as_strided(shape, sb, ob + case["shift"])
    w = (torch.rand(shape[-1], generator=rc.gen(case["seed"] + 1)) + 0.5).to(dtype)
    ia, ib = _indices(case["numel"], case["a"]), _indices(case["numel"], case["b"], case["shift"])
    same_view = ia == ib and sa == sb and oa == ob + case["shift"]
    a0, b0 = a.clone(), b.clone()
    try:
        if case["op"] == "fused":
            fused_add_rms_norm(a, b, w, backend="reference")
        else:
            rms_norm(a, w, out=b, backend="reference")
    except ValueError as e:
        assert "overlap" in str(e)
        assert torch.equal(rc.bits_of(buf), rc.bits_of(before)), "a refused call wrote memory"
        # refusing provably disjoint views would be a (harmless) false alarm; the check is exact
        # for views with one row stride, so only multi-stride layouts may be refused conservatively
        return
    # accepted: must be disjoint (or, for rms_norm's out, exactly x itself)
    assert not (ia & ib) or (case["op"] == "rms_norm_out" and same_view), "overlapping views were accepted"
    if case["op"] == "fused":
        out, new_r = a0.clone(), b0.clone()
        fused_add_rms_norm(out, new_r, w, backend="reference")
        assert rc.same_bits(b, new_r) and rc.same_bits(a, out)
    else:
        assert rc.same_bits(b, rms_norm(a0, w, backend="reference"))


BAD_NORM_ARGS = [
    "weight_dtype", "weight_shape", "weight_2d", "weight_strided", "out_shape", "out_dtype",
    "x_last_stride", "x_int", "x_0d", "out_expanded", "residual_shape", "residual_dtype",
]


@rc.property_of("norm ops: bad arguments raise TypeError / ValueError and write nothing")
@given(bad=st.sampled_from(BAD_NORM_ARGS), layout=rc.view_layouts(max_lead=2), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**31 - 1))
def test_bad_norm_arguments(bad, layout, dtype, seed):
    rc.tally("norm ops: bad arguments raise TypeError / ValueError and write nothing")
    shape = layout[0]
    h = shape[-1]
    x = _view(layout, dtype, seed)
    r = _view(layout, dtype, seed + 1)
    w = (torch.rand(h, generator=rc.gen(seed)) + 0.5).to(dtype)
    out = torch.full(shape, 7.0, dtype=dtype)
    other = torch.float32 if dtype != torch.float32 else torch.float16
    xv, rv = x.view, r.view
    call = "rms_norm"
    if bad == "weight_dtype":
        w = w.to(other)
    elif bad == "weight_shape":
        w = torch.ones(h + 1, dtype=dtype)
    elif bad == "weight_2d":
        w = w.reshape(1, h)
    elif bad == "weight_strided":
        if h == 1:
            w = torch.ones(2, dtype=dtype)  # h == 1 has no strided vector: a wrong length instead
        else:
            w = torch.ones(2 * h, dtype=dtype)[::2]
    elif bad == "out_shape":
        out = torch.zeros(*shape[:-1], h + 1, dtype=dtype)
    elif bad == "out_dtype":
        out = out.to(other)
    elif bad == "x_last_stride":
        if h == 1:
            xv = x.view.to(torch.int32)  # a single column cannot have a bad stride: bad dtype instead
        else:
            xv = torch.zeros(*shape[:-1], 2 * h, dtype=dtype)[..., ::2]
    elif bad == "x_int":
        xv = torch.zeros(shape, dtype=torch.int32)
    elif bad == "x_0d":
        xv = torch.tensor(1.0, dtype=dtype)
    elif bad == "out_expanded":
        out = torch.zeros(h, dtype=dtype).expand(*shape[:-1], h) if len(shape) > 1 and shape[-2] > 1 else out.to(other)
    elif bad == "residual_shape":
        call, rv = "fused", torch.zeros(*shape[:-1], h + 1, dtype=dtype)
    elif bad == "residual_dtype":
        call, rv = "fused", r.view.to(other)
    out_before = out.clone()
    with pytest.raises((TypeError, ValueError)):
        if call == "fused":
            fused_add_rms_norm(xv, rv, w, backend="reference")
        else:
            rms_norm(xv, w, out=out, backend="reference")
    x.assert_unchanged("x")
    r.assert_unchanged("residual")
    assert torch.equal(rc.bits_of(out), rc.bits_of(out_before)), "out was written"


# ---------------------------------------------------------------------------------------------------
# FP8 quantizer (reference backend, the CPU path)
# ---------------------------------------------------------------------------------------------------


@st.composite
def _quant_case(draw):
    k = draw(st.integers(1, 260))
    lead = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    column_major = draw(st.booleans()) and len(lead) == 1
    return dict(
        lead=lead, k=k, group=draw(st.one_of(st.integers(1, 300), st.sampled_from([16, 32, 64, 128]))),
        dtype=draw(st.sampled_from(DTYPES)), pad=draw(st.integers(0, 7)), offset=draw(st.integers(0, 7)),
        column_major=column_major, seed=draw(st.integers(0, 2**31 - 1)), magnitude=10.0 ** draw(st.integers(-5, 4)),
    )


@rc.property_of("per_token_group_quant_fp8 op (reference): bit-identical to the formula, error bound")
@given(case=_quant_case())
def test_fp8_quant_reference(case):
    rc.tally("per_token_group_quant_fp8 op (reference): bit-identical to the formula, error bound")
    lead, k, g, dtype = case["lead"], case["k"], case["group"], case["dtype"]
    rows = 1
    for n in lead:
        rows *= n
    row = k + case["pad"]
    raw = torch.randn(case["offset"] + rows * row, generator=rc.gen(case["seed"])) * case["magnitude"]
    raw[::5] *= 100.0
    buf = raw.clamp(-6e4, 6e4).to(dtype)  # finite in fp16 too
    x = buf.as_strided((rows, k), (row, 1), case["offset"]).unflatten(0, lead)
    before = buf.clone()
    q, s = per_token_group_quant_fp8(x, g, column_major_scales=case["column_major"], backend="reference")
    groups = -(-k // g)
    assert q.shape == x.shape and s.shape == (*lead, groups)
    if case["column_major"] and rows > 1 and groups > 1:
        assert s.stride() == (1, rows)
    eq, es = rc.quant_formula(x.reshape(rows, k), g)
    assert torch.equal(q.reshape(rows, k).view(torch.uint8), eq.view(torch.uint8))
    assert torch.equal(s.reshape(rows, groups), es)
    assert torch.equal(rc.bits_of(buf), rc.bits_of(before))
    # e4m3 keeps 3 mantissa bits: half an ulp is 2^-4 relative for normals, 2^-10 * s for subnormals
    xs = x.reshape(rows, k).double()
    deq = eq.double() * es.double().repeat_interleave(g, dim=1)[:, :k]
    bound = torch.maximum(xs.abs() * 2.0**-4, es.double().repeat_interleave(g, dim=1)[:, :k] * 2.0**-10)
    assert bool(((deq - xs).abs() <= bound * (1 + 1e-6)).all()), "quantization error above half an e4m3 ulp"
