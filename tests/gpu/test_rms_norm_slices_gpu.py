"""GPU tests of qlinear.ops.rms_norm_slices (CUDA one-launch kernel; Triton per-slice fallback)
against the fp32 reference on fresh random data: the MLA slices of a [M, 2112] buffer, odd bounds
(element-wise path), 3 and 6 slices, in place / out of place, misaligned pointers, forced kernel
knobs (element-wise path, PDL, block size), leading-dim views, NaN rows and CUDA-graph capture.
Columns outside the slices are checked to be untouched."""

from __future__ import annotations

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from qlinear.ops.norm import rms_norm_slices
from qlinear.reference.norm import rms_norm_ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

EPS = 1e-6
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (2e-5, 2e-5)}
MLA = (0, 1536, 2048)


@pytest.fixture(scope="module", autouse=True)
def _cuda_ext_built():
    cuda_ext_ops()


def _gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def _close(actual, expected, dtype):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=atol, equal_nan=True)


def _x(shape, dtype, seed):
    return (torch.randn(shape, device="cuda", generator=_gen(seed)) * 3).to(dtype)


def _weights(bounds, dtype, seed=11):
    g = _gen(seed)
    return [(1 + 0.5 * torch.randn(b - a, device="cuda", generator=g)).to(dtype) for a, b in zip(bounds, bounds[1:])]


def _check(x, before, bounds, ws, ys, dtype, inplace):
    keep = torch.ones(x.shape[-1], dtype=torch.bool, device=x.device)
    for i, y in enumerate(ys):
        a, b = bounds[i], bounds[i + 1]
        if inplace:
            assert y.data_ptr() == x[..., a:b].data_ptr()
        _close(y, rms_norm_ref(before[..., a:b], ws[i], EPS), dtype)
        keep[a:b] = False
    if inplace:
        assert torch.equal(x[..., keep], before[..., keep]), "columns outside the slices were written"
    else:
        assert torch.equal(x, before), "out of place modified x"


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("M", [1, 7, 16, 4096])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mla_slices(dtype, M, inplace):
    x = _x((M, 2112), dtype, seed=M)
    before = x.clone()
    ws = _weights(MLA, dtype)
    ys = rms_norm_slices(x, MLA, ws, EPS, inplace=inplace, backend="cuda")
    _check(x, before, MLA, ws, ys, dtype, inplace)


BOUNDS = {
    "odd": ((3, 700, 1001), 1100),          # unaligned offsets and widths: element-wise path
    "mixed": ((0, 1536, 1541, 2048), 2112),  # one odd slice between two 16-byte slices
    "three": ((0, 512, 1536, 2048), 2112),
    "six": ((0, 8, 136, 520, 1000, 1024, 4096), 4100),  # two launches of <= 4 slices
    "wide": ((0, 40000, 40064), 40064),      # beyond 4 x 1024 vectors: element-wise for slice 0
}


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("M", [1, 16, 4096])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(BOUNDS))
def test_bounds(case, dtype, M, inplace):
    bounds, width = BOUNDS[case]
    if case == "wide" and M == 4096:
        M = 300
    x = _x((M, width), dtype, seed=M + width)
    before = x.clone()
    ws = _weights(bounds, dtype)
    ys = rms_norm_slices(x, bounds, ws, EPS, inplace=inplace, backend="cuda")
    _check(x, before, bounds, ws, ys, dtype, inplace)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M", [1, 16, 333])
def test_misaligned(dtype, M):
    store = _x((M * 2112 + 1,), dtype, seed=5)
    x = store[1:].view(M, 2112)
    before = x.clone()
    ws = _weights(MLA, dtype)
    w_odd = [torch.empty(w.numel() + 1, device="cuda", dtype=dtype)[1:].copy_(w) for w in ws]
    ys = rms_norm_slices(x, MLA, w_odd, EPS, backend="cuda")
    _check(x, before, MLA, ws, ys, dtype, False)
    ys = rms_norm_slices(x, MLA, ws, EPS, inplace=True, backend="cuda")
    _check(x, before, MLA, ws, ys, dtype, True)


KNOBS = [(-1, 0, 0), (0, 0, 1), (1, 0, 0), (4, 0, 0), (0, 1024, 0), (0, 32, 1), (-1, 64, 1)]


@pytest.mark.parametrize("knobs", KNOBS)
@pytest.mark.parametrize("M", [1, 16, 4096])
def test_raw_op_knobs(M, knobs):
    dtype = torch.bfloat16
    ext = torch.ops.qlinear_C
    x = _x((M, 2112), dtype, seed=17)
    before = x.clone()
    ws = _weights(MLA, dtype)
    x3 = x.view(1, M, 2112)
    outs = [torch.empty(1, M, 1536, device="cuda", dtype=dtype), torch.empty(1, M, 512, device="cuda", dtype=dtype)]
    ext.rms_norm_slices(outs, x3, list(MLA), ws, EPS, *knobs)
    _check(x, before, MLA, ws, [o[0] for o in outs], dtype, False)


def test_leading_dim_views():
    dtype = torch.bfloat16
    base = _x((4, 9, 2200), dtype, seed=21)
    x = base[:, :7, 40:2152]  # [4, 7, 2112], non-collapsible leading dims
    before, base_before = x.clone(), base.clone()
    ws = _weights(MLA, dtype)
    ys = rms_norm_slices(x, MLA, ws, EPS, backend="cuda")
    _check(x, before, MLA, ws, ys, dtype, False)
    ys = rms_norm_slices(x, MLA, ws, EPS, inplace=True, backend="cuda")
    _check(x, before, MLA, ws, ys, dtype, True)
    assert torch.equal(base[:, 7:], base_before[:, 7:]), "rows outside the view were written"
    assert torch.equal(base[..., :40], base_before[..., :40]) and torch.equal(base[..., 2152:], base_before[..., 2152:])


def test_nan_row_stays_in_its_slice():
    dtype = torch.bfloat16
    x = _x((4, 2112), dtype, seed=23)
    x[1, 10] = float("nan")
    x[2, 1600] = float("inf")
    ws = _weights(MLA, dtype)
    q, kv = rms_norm_slices(x, MLA, ws, EPS, backend="cuda")
    q_ref, kv_ref = rms_norm_ref(x[:, :1536], ws[0], EPS), rms_norm_ref(x[:, 1536:2048], ws[1], EPS)
    assert torch.equal(torch.isnan(q), torch.isnan(q_ref)) and torch.equal(torch.isnan(kv), torch.isnan(kv_ref))
    _close(q, q_ref, dtype)
    _close(kv, kv_ref, dtype)


def test_triton_backend_per_slice():
    dtype = torch.bfloat16
    x = _x((16, 2112), dtype, seed=25)
    before = x.clone()
    ws = _weights(MLA, dtype)
    _check(x, before, MLA, ws, rms_norm_slices(x, MLA, ws, EPS, backend="triton"), dtype, False)


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("M", [1, 16])
def test_cuda_graph_capture(M, inplace):
    dtype = torch.bfloat16
    x = _x((M, 2112), dtype, seed=27)
    ws = _weights(MLA, dtype)
    rms_norm_slices(x.clone(), MLA, ws, EPS, inplace=inplace, backend="cuda")  # warm up (build, caches)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ys = rms_norm_slices(x, MLA, ws, EPS, inplace=inplace, backend="cuda")
    for seed in (28, 29):
        fresh = _x((M, 2112), dtype, seed=seed)
        x.copy_(fresh)
        g.replay()
        torch.cuda.synchronize()
        _check(x, fresh, MLA, ws, ys, dtype, inplace)
