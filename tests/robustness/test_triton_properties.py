"""Property-based tests of the Triton kernels, run by the Triton interpreter on the CPU.

Properties (each ``max_examples`` >= 200, derandomized; see conftest.py):

* ``rms_norm_triton`` on random ``[..., H]`` views (H = 1, odd, prime; 0-2 leading dims in any
  storage order, gaps between rows, storage offsets), out of place into another random view or
  in place, every accepted dtype, against ``y = x / sqrt(mean(x^2) + eps) * w`` in fp64; the
  memory around the output view is unchanged and the input is unchanged (out of place).
* ``fused_add_rms_norm_triton`` likewise, with x and residual in separate buffers or interleaved
  in one (``[T, 2H]``-like rows): residual = round(x + r), x = rmsnorm(residual) * w; the sentinel
  memory around both views is unchanged.
* ``per_token_group_quant_fp8`` (Triton) bit-identical to the plain formula
  ``s = max(amax, 1e-10) / 448``, ``q = e4m3(clamp(x / s, -448, 448))`` for random M, K, group
  sizes, row strides, offsets, padded rows and column-major scales.

The kernels are called through their launchers, after ``qlinear.ops.norm._collapse_leading`` (the
op's own view collapsing) for the norms, because the public ops send CPU tensors to the reference.

``TRITON_INTERPRET=1`` must be set before triton is imported, and this module must not set it for
the rest of the session. So the properties run in this process only when the variable was already
set and triton runs interpreted here (a CPU session: tests/conftest.py switches it on before any
module is collected); otherwise one test runs this file in a child process with the variable set
and checks that every property passed there (its example counts are merged into this session's
summary).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import _robust_common as rc

THIS = pathlib.Path(__file__).resolve()
ROOT = THIS.parents[2]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _interpreted_here() -> bool:
    if os.environ.get("TRITON_INTERPRET") != "1" or torch.cuda.is_available():
        return False
    from qlinear.kernels import norm_triton  # the variable is set: triton (if new) loads interpreted

    return type(norm_triton._rms_norm_kernel).__name__ == "InterpretedFunction"


IN_PROCESS = _interpreted_here()
in_process = pytest.mark.skipif(not IN_PROCESS, reason="needs triton interpreted in this process; run by the subprocess test")


@pytest.mark.skipif(IN_PROCESS, reason="the properties run in this process")
def test_properties_interpreted_in_subprocess(tmp_path):
    counts = tmp_path / "counts.json"
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="", QLINEAR_ROBUSTNESS_COUNTS=str(counts))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(THIS)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    ran = json.loads(counts.read_text())
    assert len(ran) == 3, ran
    rc.EXAMPLES.update(ran)


# ---------------------------------------------------------------------------------------------------
# RMSNorm kernels
# ---------------------------------------------------------------------------------------------------


def _data_view(layout, dtype, seed, magnitude, zero_rows):
    shape, strides, offset, numel = layout
    buf = rc.sentinel_buffer(numel, torch.float32, seed) * magnitude
    view = buf.as_strided(shape, strides, offset)
    if zero_rows and view.dim() > 1:
        view.select(view.dim() - 2, 0).zero_()  # one row (or a slab of rows) exactly zero
    return rc.StridedView(buf.to(dtype), shape, strides, offset)


def _weight(h, dtype, seed, offset):
    # a contiguous vector at a storage offset inside a larger buffer
    wbuf = (torch.rand(offset + h + 3, generator=rc.gen(seed)) + 0.5).to(dtype)
    return wbuf[offset : offset + h]


@st.composite
def _norm_case(draw):
    x_layout = draw(rc.view_layouts())
    inplace = draw(st.booleans())
    out_layout = None if inplace else draw(rc.view_layouts(shape=x_layout[0]))
    return dict(
        x_layout=x_layout,
        out_layout=out_layout,
        dtype=draw(st.sampled_from(DTYPES)),
        seed=draw(st.integers(0, 2**31 - 1)),
        magnitude=10.0 ** draw(st.integers(-3, 2)),
        zero_rows=draw(st.booleans()),
        eps=draw(st.sampled_from([1e-6, 1e-5, 1e-2])),
        w_offset=draw(st.integers(0, 5)),
    )


@in_process
@rc.property_of("triton rms_norm: strided / offset / in-place views vs fp64 formula, sentinels")
@given(case=_norm_case())
def test_rms_norm_triton(case):
    rc.tally("triton rms_norm: strided / offset / in-place views vs fp64 formula, sentinels")
    from qlinear.kernels import norm_triton
    from qlinear.ops.norm import _collapse_leading

    dtype, eps = case["dtype"], case["eps"]
    x = _data_view(case["x_layout"], dtype, case["seed"], case["magnitude"], case["zero_rows"])
    h = x.view.shape[-1]
    w = _weight(h, dtype, case["seed"] + 1, case["w_offset"])
    expected = rc.fp64_rms_norm(x.view, w, eps)
    out = x if case["out_layout"] is None else _data_view(case["out_layout"], dtype, case["seed"] + 2, 1.0, False)
    for o3, x3 in _collapse_leading((out.view, x.view)):
        norm_triton.rms_norm_triton(o3, x3, w, eps)
    rc.close_ulp(out.view, expected, dtype, "y")
    out.assert_outside_untouched("out")
    if out is not x:
        x.assert_unchanged("x (read only)")


@st.composite
def _fused_case(draw):
    shared = draw(st.booleans())
    x_layout = draw(rc.view_layouts(factor=2 if shared else 1))
    r_layout = None if shared else draw(rc.view_layouts(shape=x_layout[0]))
    return dict(
        x_layout=x_layout,
        r_layout=r_layout,
        dtype=draw(st.sampled_from(DTYPES)),
        seed=draw(st.integers(0, 2**31 - 1)),
        magnitude=10.0 ** draw(st.integers(-3, 1)),
        zero_rows=draw(st.booleans()),
        eps=draw(st.sampled_from([1e-6, 1e-5, 1e-2])),
        w_offset=draw(st.integers(0, 5)),
    )


def _sum_tol(dtype):
    # the interpreter's fp32 -> bf16 cast truncates: one bf16 ulp; fp16 / fp32 round to nearest
    return {torch.float32: 0.0, torch.float16: 0.0, torch.bfloat16: 2.0**-7}[dtype]


@in_process
@rc.property_of("triton fused_add_rms_norm: strided / interleaved views vs fp64 formula, sentinels")
@given(case=_fused_case())
def test_fused_add_rms_norm_triton(case):
    rc.tally("triton fused_add_rms_norm: strided / interleaved views vs fp64 formula, sentinels")
    from qlinear.kernels import norm_triton
    from qlinear.ops.norm import _collapse_leading

    dtype, eps = case["dtype"], case["eps"]
    x = _data_view(case["x_layout"], dtype, case["seed"], case["magnitude"], case["zero_rows"])
    shape, strides, offset, _ = case["x_layout"]
    h = shape[-1]
    if case["r_layout"] is None:  # interleaved rows of one buffer: r at +H of every x row
        r_view = x.buf.as_strided(shape, strides, offset + h)
        r_idx = torch.arange(x.buf.numel()).as_strided(shape, strides, offset + h).reshape(-1)
        assert not bool(x.inside[r_idx].any())
        x.inside[r_idx] = True
        r = None
    else:
        r = _data_view(case["r_layout"], dtype, case["seed"] + 3, case["magnitude"], False)
        r_view = r.view
    w = _weight(h, dtype, case["seed"] + 1, case["w_offset"])
    x0, r0 = x.view.clone(), r_view.clone()
    for x3, r3 in _collapse_leading((x.view, r_view)):
        norm_triton.fused_add_rms_norm_triton(x3, r3, w, eps)
    exact_sum = x0.double() + r0.double()
    tol = _sum_tol(dtype)
    torch.testing.assert_close(r_view.double(), exact_sum.to(dtype).double(), rtol=tol, atol=0.0 if tol == 0 else 1e-30,
                               msg=lambda m: f"residual: {m}")
    rc.close_ulp(x.view, rc.fp64_rms_norm(r_view, w, eps), dtype, "x (normed)")  # the norm of the *stored* sum
    x.assert_outside_untouched("x / residual buffer")
    if r is not None:
        r.assert_outside_untouched("residual")


# ---------------------------------------------------------------------------------------------------
# FP8 per-token-group quantization
# ---------------------------------------------------------------------------------------------------

E4M3 = rc.E4M3


@st.composite
def _quant_case(draw):
    k = draw(st.integers(1, 300))
    group = draw(st.sampled_from([16, 32, 64, 128, 256, None]))
    return dict(
        m=draw(st.integers(1, 9)),
        k=k,
        group=k if group is None else group,
        dtype=draw(st.sampled_from(DTYPES)),
        pad=draw(st.integers(0, 9)),
        offset=draw(st.integers(0, 9)),
        column_major=draw(st.booleans()),
        pad_rows_to=draw(st.sampled_from([1, 2, 4, 8])),
        seed=draw(st.integers(0, 2**31 - 1)),
        magnitude=10.0 ** draw(st.integers(-4, 3)),
        zero_row=draw(st.booleans()),
    )


@in_process
@rc.property_of("triton per_token_group_quant_fp8: bit-identical to the formula")
@given(case=_quant_case())
def test_per_token_group_quant_triton(case):
    rc.tally("triton per_token_group_quant_fp8: bit-identical to the formula")
    from qlinear.kernels import fp8_triton

    m, k, g, dtype = case["m"], case["k"], case["group"], case["dtype"]
    row = k + case["pad"]
    raw = torch.randn(case["offset"] + m * row, generator=rc.gen(case["seed"])) * case["magnitude"]
    raw[::7] *= 50.0  # outliers: other elements of their groups land in e4m3's subnormal range
    buf = raw.clamp(-6e4, 6e4).to(dtype)  # finite in fp16 too
    x = buf.as_strided((m, k), (row, 1), case["offset"])
    if case["zero_row"]:
        x[0].zero_()
    before = buf.clone()
    q, s = fp8_triton.per_token_group_quant_fp8(
        x, g, column_major_scales=case["column_major"], pad_rows_to=case["pad_rows_to"], scale_eps=1e-10
    )
    m_pad = -(-m // case["pad_rows_to"]) * case["pad_rows_to"]
    groups = -(-k // g)
    assert q.shape == (m_pad, k) and q.dtype == E4M3 and s.shape == (m_pad, groups) and s.dtype == torch.float32
    if case["column_major"] and m_pad > 1 and groups > 1:
        assert s.stride() == (1, m_pad)
    eq, es = rc.quant_formula(x, g)
    assert torch.equal(q[:m].view(torch.uint8), eq.view(torch.uint8)), "codes differ from the formula"
    assert torch.equal(s[:m], es), "scales differ from the formula"
    if m_pad > m:
        assert not bool(q[m:].view(torch.uint8).any())
        assert torch.equal(s[m:], torch.full_like(s[m:], 1e-10) / 448.0)
    assert torch.equal(rc.bits_of(buf), rc.bits_of(before)), "input was modified"
