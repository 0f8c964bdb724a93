"""CPU tests of qlinear.ops.rms_norm_slices (reference backend): agreement with per-slice
rms_norm on random data, in place / out of place, leading-dim views, argument errors, overlap
rules of the custom op, opcheck and a torch.compile trace. The CUDA kernel is tested in
tests/gpu/test_rms_norm_slices_gpu.py."""

from __future__ import annotations

import pytest
import torch

from qlinear.ops import rms_norm, rms_norm_slices
from qlinear.reference.norm import rms_norm_ref

EPS = 1e-6
DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _x(shape, dtype, seed=0):
    return (torch.randn(shape, generator=_gen(seed)) * 3).to(dtype)


def _weights(bounds, dtype, seed=1):
    g = _gen(seed)
    return [(1 + 0.5 * torch.randn(b - a, generator=g)).to(dtype) for a, b in zip(bounds, bounds[1:])]


CASES = [
    ((5, 2112), (0, 1536, 2048)),   # DeepSeek MLA q_c / kv_c, rope columns untouched
    ((1, 2112), (0, 1536, 2048)),
    ((7, 100), (3, 40, 41, 97)),     # odd widths, a width-1 slice, both ends unused
    ((4, 64), (0, 64)),              # one slice = the whole row
    ((3, 96), (0, 8, 16, 32, 48, 64, 96)),  # six slices (CUDA: two launches)
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,bounds", CASES)
def test_matches_per_slice_rms_norm(shape, bounds, dtype):
    x = _x(shape, dtype)
    ws = _weights(bounds, dtype)
    before = x.clone()
    ys = rms_norm_slices(x, bounds, ws, EPS, backend="reference")
    assert torch.equal(x, before), "out of place modified x"
    assert len(ys) == len(ws)
    for i, y in enumerate(ys):
        xs = x[..., bounds[i]:bounds[i + 1]]
        assert y.shape == xs.shape and y.dtype == dtype and y.is_contiguous()
        assert torch.equal(y, rms_norm(xs, ws[i], EPS, backend="reference"))
        # independent fp64 check: one rounding of the result in the dtype
        xd = xs.double()
        exp = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + EPS) * ws[i].double()
        tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}[dtype]
        torch.testing.assert_close(y.double(), exp, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,bounds", CASES)
def test_inplace(shape, bounds, dtype):
    x = _x(shape, dtype, seed=2)
    ws = _weights(bounds, dtype)
    before = x.clone()
    ys = rms_norm_slices(x, bounds, ws, EPS, inplace=True, backend="reference")
    keep = torch.ones(shape[-1], dtype=torch.bool)
    for i, y in enumerate(ys):
        a, b = bounds[i], bounds[i + 1]
        assert y.data_ptr() == x[..., a:b].data_ptr() and y.shape == x[..., a:b].shape
        assert torch.equal(y, rms_norm_ref(before[..., a:b], ws[i], EPS))
        keep[a:b] = False
    assert torch.equal(x[..., keep], before[..., keep]), "columns outside the slices were written"


def test_leading_dims_and_strided_x():
    base = _x((4, 3, 2200), torch.bfloat16, seed=3)
    x = base[:, :, 40:2152].transpose(0, 1)  # [3, 4, 2112], non-collapsible leading dims
    bounds = (0, 1536, 2048)
    ws = _weights(bounds, torch.bfloat16)
    ys = rms_norm_slices(x, bounds, ws, backend="reference")
    for i, y in enumerate(ys):
        assert y.shape == (3, 4, bounds[i + 1] - bounds[i])
        assert torch.equal(y, rms_norm_ref(x[..., bounds[i]:bounds[i + 1]], ws[i], EPS))


def test_empty_rows():
    x = torch.empty(0, 64)
    ys = rms_norm_slices(x, (0, 32, 64), _weights((0, 32, 64), torch.float32), backend="reference")
    assert [y.shape for y in ys] == [(0, 32), (0, 32)]


# ----------------------------------------------------------------------------- errors


def _ok():
    x = _x((4, 64), torch.float32)
    return x, (0, 32, 48), _weights((0, 32, 48), torch.float32)


@pytest.mark.parametrize(
    "bounds,match",
    [
        ((0, 32, 65), r"bounds: expected offsets within \[0, 64\]"),
        ((-1, 32, 48), r"bounds: expected offsets within \[0, 64\]"),
        ((0, 48, 32), "strictly increasing"),
        ((0, 32, 32), "strictly increasing"),
        ((0,), "at least 2 column offsets"),
    ],
)
def test_bad_bounds(bounds, match):
    x, _, _ = _ok()
    ws = [torch.ones(4)] * max(1, len(bounds) - 1)
    with pytest.raises(ValueError, match=match):
        rms_norm_slices(x, bounds, ws, backend="reference")


def test_bad_bounds_type():
    x, bounds, ws = _ok()
    with pytest.raises(TypeError, match="bounds: expected a sequence of ints"):
        rms_norm_slices(x, (0, 32.0, 48), ws, backend="reference")
    with pytest.raises(TypeError, match="bounds: expected a sequence of ints"):
        rms_norm_slices(x, torch.tensor([0, 32, 48]), ws, backend="reference")


def test_weight_count_and_size():
    x, bounds, ws = _ok()
    with pytest.raises(ValueError, match=r"weights: expected 2 tensors"):
        rms_norm_slices(x, bounds, ws[:1], backend="reference")
    with pytest.raises(ValueError, match=r"weights\[1\] \(slice \[32, 48\)\): weight: expected shape \(16,\)"):
        rms_norm_slices(x, bounds, [ws[0], torch.ones(17)], backend="reference")
    with pytest.raises(TypeError, match="weights: expected a sequence"):
        rms_norm_slices(x, (0, 32), ws[0], backend="reference")
    with pytest.raises(TypeError, match=r"weights\[0\]: expected a torch.Tensor"):
        rms_norm_slices(x, bounds, [1.0, ws[1]], backend="reference")


def test_dtype_mismatch():
    x, bounds, ws = _ok()
    with pytest.raises(TypeError, match=r"weights\[0\] .*expected dtype torch.float32"):
        rms_norm_slices(x, bounds, [ws[0].bfloat16(), ws[1]], backend="reference")
    with pytest.raises(TypeError, match="x: expected dtype float16, bfloat16 or float32"):
        rms_norm_slices(x.double(), bounds, [w.double() for w in ws], backend="reference")


def test_last_stride():
    x = _x((64, 4), torch.float32).t()  # [4, 64], stride(-1) == 4
    with pytest.raises(ValueError, match=r"x: expected stride\(-1\) == 1"):
        rms_norm_slices(x, (0, 32, 48), _weights((0, 32, 48), torch.float32), backend="reference")


def test_cuda_backend_needs_cuda_tensors():
    x, bounds, ws = _ok()
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        rms_norm_slices(x, bounds, ws, backend="cuda")


def test_inplace_refuses_overlapping_x():
    x = torch.randn(1, 64).expand(4, 64)
    with pytest.raises(ValueError, match="internally overlapping"):
        rms_norm_slices(x, (0, 32), [torch.ones(32)], inplace=True, backend="reference")


def test_op_overlap_rules():
    op = torch.ops.qlinear.rms_norm_slices
    x, bounds, ws = _ok()
    # out for slice 0 that is x's slice 1 region: overlaps x without being its own slice
    with pytest.raises(ValueError, match=r"outs\[0\]: overlaps x"):
        op([x[:, 16:48], torch.empty(4, 16)], x, list(bounds), ws, EPS, "reference")
    buf = torch.empty(4, 100)
    with pytest.raises(ValueError, match=r"outs\[1\] and outs\[0\] overlap"):
        op([buf[:, :32], buf[:, 20:36]], x, list(bounds), ws, EPS, "reference")
    with pytest.raises(ValueError, match=r"outs: expected 2 tensors"):
        op([buf[:, :32]], x, list(bounds), ws, EPS, "reference")
    with pytest.raises(ValueError, match=r"outs\[1\]: expected shape \(4, 16\)"):
        op([buf[:, :32], buf[:, 40:57]], x, list(bounds), ws, EPS, "reference")
    # disjoint outputs inside one buffer are fine
    op([buf[:, :32], buf[:, 40:56]], x, list(bounds), ws, EPS, "reference")
    assert torch.equal(buf[:, 40:56], rms_norm_ref(x[:, 32:48], ws[1], EPS))


# ----------------------------------------------------------------------------- custom op


@pytest.mark.parametrize("inplace", [False, True])
def test_opcheck(inplace):
    base = torch.randn(5, 80)
    x = base[:, 8:72]
    bounds = [0, 40, 56]
    ws = [torch.randn(40), torch.randn(16)]
    outs = [x[:, 0:40], x[:, 40:56]] if inplace else [torch.empty(5, 40), torch.empty(5, 16)]
    torch.library.opcheck(torch.ops.qlinear.rms_norm_slices.default, (outs, x, bounds, ws, EPS, "reference"))


def test_torch_compile_traces_op():
    bounds = (0, 40, 56)
    ws = [torch.randn(40), torch.randn(16)]

    def f(x):
        q, kv = rms_norm_slices(x, bounds, ws, EPS, backend="reference")
        return q * 2, kv

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    x = torch.randn(4, 64)
    for a, b in zip(compiled(x), f(x)):
        torch.testing.assert_close(a, b)


def test_spans_overlap_brute_force():
    from qlinear.ops import norm as norm_ops

    buf = torch.empty(6, 40)
    flat = torch.arange(buf.numel()).view(6, 40)
    views = [(slice(0, 6), slice(0, 16)), (slice(0, 6), slice(16, 40)), (slice(1, 3), slice(10, 20)),
             (slice(2, 3), slice(0, 40)), (slice(0, 6), slice(38, 40)), (slice(3, 6), slice(0, 5))]
    for va in views:
        for vb in views:
            truth = bool(set(flat[va].flatten().tolist()) & set(flat[vb].flatten().tolist()))
            assert norm_ops._spans_overlap(buf[va], buf[vb]) is truth, (va, vb)
