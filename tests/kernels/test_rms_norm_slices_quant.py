"""CPU tests of rms_norm_slices(..., quant_fp8=...) (reference backend): quantized slices equal
rms_norm_quant_fp8's reference bit for bit, plain slices rms_norm's; scale layouts, group sizes,
in place, argument errors, the custom op's overlap rules, opcheck and a torch.compile trace. The
CUDA one-launch kernel is tested in tests/gpu/test_mla_norm_quant_gpu.py."""

from __future__ import annotations

import pytest
import torch

import qlinear.ops  # noqa: F401  (registers torch.ops.qlinear.*)
from qlinear._utils import FP8_E4M3
from qlinear.ops import rms_norm_quant_fp8, rms_norm_slices
from qlinear.reference.norm import rms_norm_ref

EPS = 1e-6
MLA = (0, 1536, 2048)


def _x(shape, dtype=torch.bfloat16, seed=0):
    return (torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3).to(dtype)


def _weights(bounds, dtype=torch.bfloat16, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(1 + 0.5 * torch.randn(b - a, generator=g)).to(dtype) for a, b in zip(bounds, bounds[1:])]


def _same_q(a, b):
    assert a.dtype == FP8_E4M3 and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("M", [1, 5])
def test_mla_matches_per_slice_ops(dtype, column_major, M):
    qkv = _x((M, 2112), dtype)
    w_q, w_kv = _weights(MLA, dtype)
    before = qkv.clone()
    (q, s), kv = rms_norm_slices(qkv, MLA, (w_q, w_kv), EPS, quant_fp8=(True, False),
                                 column_major_scales=column_major, backend="reference")
    qr, sr = rms_norm_quant_fp8(qkv[:, :1536], w_q, EPS, 128, column_major_scales=column_major, backend="reference")
    _same_q(q, qr)
    assert torch.equal(s, sr) and s.stride() == sr.stride() and s.shape == (M, 12)
    assert torch.equal(kv, rms_norm_ref(qkv[:, 1536:2048], w_kv, EPS)) and kv.dtype == dtype
    assert torch.equal(qkv, before)


def test_formula_written_out():
    # Independent of qlinear.reference: the docstring's formula in fp32, e4m3 through torch's cast
    # (round to nearest even). A tolerance-free check would only re-run the same torch ops, so
    # compare the dequantized values: |q * scale - y| <= half an e4m3 step (2^-4 relative) of |y|,
    # or 2^-10 * scale near zero (e4m3's smallest subnormal step is 2^-9).
    M, W, G = 6, 1536, 128
    qkv = _x((M, 2112), seed=7)
    w_q, w_kv = _weights(MLA, seed=8)
    (q, s), _ = rms_norm_slices(qkv, MLA, (w_q, w_kv), EPS, quant_fp8=(True, False), backend="reference")
    xf = qkv[:, :W].float()
    y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * w_q.float()
    scale = y.view(M, W // G, G).abs().amax(-1).clamp_min(1e-10) / 448
    assert torch.allclose(s, scale, rtol=1e-6, atol=0)
    back = q.float().view(M, W // G, G) * s[..., None]
    err = (back - y.view(M, W // G, G)).abs()
    bound = torch.maximum(y.view(M, W // G, G).abs() * 2.0**-4, s[..., None] * 2.0**-10)
    assert bool((err <= bound * 1.0001).all()), float((err / bound).max())
    assert float(back.abs().amax()) > 0


@pytest.mark.parametrize("group", [64, 128, 100])
def test_group_sizes_and_all_quantized(group):
    bounds = (0, 256, 640)
    x = _x((3, 700))
    ws = _weights(bounds)
    res = rms_norm_slices(x, bounds, ws, EPS, quant_fp8=True, group_size=group, backend="reference")
    for i, (q, s) in enumerate(res):
        qr, sr = rms_norm_quant_fp8(x[:, bounds[i]:bounds[i + 1]], ws[i], EPS, group, backend="reference")
        _same_q(q, qr)
        assert torch.equal(s, sr)


def test_inplace_plain_slice_and_untouched_columns():
    qkv = _x((4, 2112))
    w_q, w_kv = _weights(MLA)
    before = qkv.clone()
    (q, s), kv = rms_norm_slices(qkv, MLA, (w_q, w_kv), EPS, inplace=True, quant_fp8=(True, False), backend="reference")
    assert kv.data_ptr() == qkv[:, 1536:].data_ptr()
    assert torch.equal(kv, rms_norm_ref(before[:, 1536:2048], w_kv, EPS))
    assert torch.equal(qkv[:, :1536], before[:, :1536]) and torch.equal(qkv[:, 2048:], before[:, 2048:])
    qr, _ = rms_norm_quant_fp8(before[:, :1536], w_q, EPS, 128, backend="reference")
    _same_q(q, qr)


def test_no_quant_is_the_plain_op():
    qkv = _x((3, 2112))
    ws = _weights(MLA)
    a = rms_norm_slices(qkv, MLA, ws, EPS, quant_fp8=(False, False), backend="reference")
    b = rms_norm_slices(qkv, MLA, ws, EPS, backend="reference")
    assert all(torch.equal(u, v) for u, v in zip(a, b))


def test_zero_rows():
    qkv = _x((0, 2112))
    (q, s), kv = rms_norm_slices(qkv, MLA, _weights(MLA), EPS, quant_fp8=(True, False), backend="reference")
    assert q.shape == (0, 1536) and s.shape == (0, 12) and kv.shape == (0, 512)


def test_errors():
    qkv = _x((3, 2112))
    ws = _weights(MLA)
    with pytest.raises(TypeError, match="quant_fp8"):
        rms_norm_slices(qkv, MLA, ws, EPS, quant_fp8=(True,))
    with pytest.raises(TypeError, match="quant_fp8"):
        rms_norm_slices(qkv, MLA, ws, EPS, quant_fp8=(1, 0))
    with pytest.raises(ValueError, match="group_size"):
        rms_norm_slices(qkv, MLA, ws, EPS, quant_fp8=True, group_size=0)
    with pytest.raises(ValueError, match="2-D"):
        rms_norm_slices(qkv.view(1, 3, 2112), MLA, ws, EPS, quant_fp8=(True, False))
    with pytest.raises(TypeError, match=r"weights\[1\]"):
        rms_norm_slices(qkv, MLA, (ws[0], ws[1].float()), EPS, quant_fp8=(True, False))
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA"):
        rms_norm_slices(qkv, MLA, ws, EPS, quant_fp8=(True, False), backend="cuda")


def test_op_overlap_rules():
    op = torch.ops.qlinear.rms_norm_slices_quant
    qkv = _x((3, 2112))
    ws = _weights(MLA)
    q = torch.empty(3, 1536, dtype=FP8_E4M3)
    s = torch.empty(3, 12)
    buf = torch.empty(3, 600, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"outs\[1\]: overlaps x"):
        op([q, qkv[:, 1000:1512]], [s], qkv, list(MLA), ws, [True, False], EPS, 128, "reference")
    with pytest.raises(ValueError, match="overlap"):
        op([q, buf[:, :512]], [buf.view(torch.float32)[:, :12]], qkv, list(MLA), ws, [True, False], EPS, 128,
           "reference")
    op([q, buf[:, :512]], [s], qkv, list(MLA), ws, [True, False], EPS, 128, "reference")
    assert torch.equal(buf[:, :512], rms_norm_ref(qkv[:, 1536:2048], ws[1], EPS))


def test_opcheck():
    qkv = _x((5, 2112))
    ws = _weights(MLA)
    outs = [torch.empty(5, 1536, dtype=FP8_E4M3), torch.empty(5, 512, dtype=torch.bfloat16)]
    # test_schema compares fp8 tensors with allclose, which CPU fp8 does not implement
    torch.library.opcheck(torch.ops.qlinear.rms_norm_slices_quant.default,
                          (outs, [torch.empty(5, 12)], qkv, list(MLA), ws, [True, False], EPS, 128, "reference"),
                          test_utils=("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration"))
    plain = [torch.empty(5, 1536, dtype=torch.bfloat16), torch.empty(5, 512, dtype=torch.bfloat16)]
    torch.library.opcheck(torch.ops.qlinear.rms_norm_slices_quant.default,
                          (plain, [], qkv, list(MLA), ws, [False, False], EPS, 128, "reference"))


def test_compile_trace():
    qkv = _x((4, 2112))
    ws = _weights(MLA)

    def f(x):
        return rms_norm_slices(x, MLA, ws, EPS, quant_fp8=(True, False), backend="reference")

    (q, s), kv = torch.compile(f, fullgraph=True, backend="aot_eager")(qkv)
    (qe, se), kve = f(qkv)
    _same_q(q, qe)
    assert torch.equal(s, se) and torch.equal(kv, kve)
