"""CPU tests of RMSNorm: the fp32 reference against a plain fp64 formula written here, the public
ops (reference backend) on strided / 3-D / 4-D views with sentinel checks, argument errors,
``torch.library.opcheck`` of the custom ops, a torch.compile trace, and the RMSNorm module."""

from __future__ import annotations

import pytest
import torch

from qlinear.layers.norm import RMSNorm, rms_norm_weight_loader
from qlinear.ops import norm as norm_ops
from qlinear.ops.norm import fused_add_rms_norm, rms_norm
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref

TOKENS = [1, 3, 17]
HIDDEN = [1, 8, 33, 130, 771]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
STRIDED = [False, True]
EPS = 1e-6
# one rounding of the result in the dtype, plus the fp32 vs fp64 difference
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (1e-5, 1e-5)}


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rows(T: int, H: int, dtype: torch.dtype, strided: bool, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(view, base buffer): a [T, H] view, strided inside a wider random buffer when asked."""
    width = H + 13 if strided else H
    base = (torch.randn(T, width, generator=_gen(seed)) * 2.0).to(dtype)
    x = base[:, 5 : 5 + H] if strided else base
    if T > 1 and H > 1:
        assert x.is_contiguous() != strided
    return x, base


def _weight(H: int, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    return (1.0 + 0.5 * torch.randn(H, generator=_gen(seed))).to(dtype)


def _plain_fp64(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Independent formula: per-row loop in fp64."""
    xd = x.double().reshape(-1, x.shape[-1])
    rows = []
    for r in range(xd.shape[0]):
        ms = float((xd[r] * xd[r]).sum()) / xd.shape[1]
        rows.append(xd[r] / (ms + eps) ** 0.5 * w.double())
    return torch.stack(rows).reshape(x.shape)


def _assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=True)


# ----------------------------------------------------------------------------- reference


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", HIDDEN)
@pytest.mark.parametrize("T", TOKENS)
def test_reference_matches_fp64_formula(T, H, dtype):
    x, _ = _rows(T, H, dtype, strided=True)
    w = _weight(H, dtype)
    y = rms_norm_ref(x, w, EPS)
    assert y.dtype == dtype and y.shape == x.shape
    _assert_close(y, _plain_fp64(x, w, EPS), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", HIDDEN)
def test_fused_reference_matches_fp64_formula(H, dtype):
    x, _ = _rows(5, H, dtype, strided=True, seed=2)
    r, _ = _rows(5, H, dtype, strided=False, seed=3)
    w = _weight(H, dtype)
    x0, r0 = x.clone(), r.clone()
    out, new_r = fused_add_rms_norm_ref(x, r, w, EPS)
    # the sum of two fp16/bf16/fp32 numbers is exact in fp64, so one rounding gives the same bits
    torch.testing.assert_close(new_r, (x0.double() + r0.double()).to(dtype), rtol=0, atol=0)
    _assert_close(out, _plain_fp64(new_r, w, EPS), dtype)
    assert torch.equal(x, x0) and torch.equal(r, r0), "the reference must not modify its inputs"


def test_reference_eps_and_nonfinite():
    w = torch.ones(4)
    z = rms_norm_ref(torch.zeros(2, 4), w, 1e-2)
    assert torch.equal(z, torch.zeros(2, 4))
    x = torch.tensor([[1.0, float("inf"), 2.0, 3.0], [1.0, float("nan"), 2.0, 3.0], [3.0, 4.0, 0.0, 0.0]])
    y = rms_norm_ref(x, w, 0.0)
    assert torch.isnan(y[0, 1]) and torch.equal(y[0, [0, 2, 3]], torch.zeros(3))
    assert torch.isnan(y[1]).all()
    torch.testing.assert_close(y[2], torch.tensor([3.0, 4.0, 0.0, 0.0]) / 2.5)


# ----------------------------------------------------------------------------- op, reference backend


@pytest.mark.parametrize("strided", STRIDED)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", [8, 33, 771])
def test_op_rms_norm_strided_out(H, dtype, strided):
    x, base = _rows(7, H, dtype, strided)
    base0 = base.clone()
    w = _weight(H, dtype)
    out_base = torch.randn(7, H + 9).to(dtype)
    out = out_base[:, 4 : 4 + H]
    out_base0 = out_base.clone()
    y = rms_norm(x, w, EPS, out=out, backend="reference")
    assert y is out
    _assert_close(out, _plain_fp64(x, w, EPS), dtype)
    assert torch.equal(base, base0), "x must be untouched"
    outside = torch.ones_like(out_base, dtype=torch.bool)
    outside[:, 4 : 4 + H] = False
    assert torch.equal(out_base[outside], out_base0[outside]), "bytes around out were written"


@pytest.mark.parametrize("strided", STRIDED)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", [8, 33, 771])
def test_op_fused_strided(H, dtype, strided):
    buf = (torch.randn(6, 2 * H + 20, generator=_gen(4)) * 2).to(dtype)
    x = buf[:, 3 : 3 + H] if strided else buf[:, 3 : 3 + H].clone()
    r = buf[:, H + 10 : 2 * H + 10] if strided else buf[:, H + 10 : 2 * H + 10].clone()
    assert x.is_contiguous() != strided
    w = _weight(H, dtype)
    x0, r0, buf0 = x.clone(), r.clone(), buf.clone()
    assert fused_add_rms_norm(x, r, w, EPS, backend="reference") is None
    new_r = (x0.double() + r0.double()).to(dtype)
    torch.testing.assert_close(r, new_r, rtol=0, atol=0)
    _assert_close(x, _plain_fp64(new_r, w, EPS), dtype)
    if strided:
        keep = torch.ones_like(buf, dtype=torch.bool)
        keep[:, 3 : 3 + H] = False
        keep[:, H + 10 : 2 * H + 10] = False
        assert torch.equal(buf[keep], buf0[keep])


def test_op_inplace_out_is_x():
    x, _ = _rows(4, 64, torch.float32, strided=True)
    w = _weight(64, torch.float32)
    expected = _plain_fp64(x, w, EPS)
    assert rms_norm(x, w, EPS, out=x, backend="reference") is x
    _assert_close(x, expected, torch.float32)


# 3-D / 4-D views, collapsible and not
VIEWS = {
    "3d_contiguous": lambda: torch.randn(2, 5, 40)[..., :40],
    "3d_rows_strided": lambda: torch.randn(2, 5, 56)[..., 8:48],
    "3d_non_collapsible": lambda: torch.randn(3, 6, 48)[:, :4, :40],
    "3d_transposed": lambda: torch.randn(5, 3, 40).transpose(0, 1),
    "4d_non_collapsible": lambda: torch.randn(2, 4, 3, 48)[:, :3, :2, 3:43],
    "4d_collapsible_inner": lambda: torch.randn(2, 4, 3, 48)[:, :3, :, 3:43],
    "1d": lambda: torch.randn(40),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_collapse_leading_covers_every_row_once(name):
    x = VIEWS[name]()
    out = torch.empty(x.shape)
    launches = list(norm_ops._collapse_leading((x, out)))
    seen = []
    for x3, o3 in launches:
        assert x3.dim() == 3 and x3.stride(2) == 1 and x3.shape == o3.shape
        assert x3.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()  # no copy
        seen.append(x3.reshape(-1, x.shape[-1]))
    assert torch.equal(torch.cat(seen).sort(dim=0).values, x.reshape(-1, x.shape[-1]).sort(dim=0).values)
    if name == "4d_non_collapsible":
        assert len(launches) == 2
    elif name != "1d":
        assert len(launches) == 1


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_op_views(name):
    x = VIEWS[name]()
    H = x.shape[-1]
    w = _weight(H, torch.float32)
    _assert_close(rms_norm(x, w, EPS, backend="reference"), _plain_fp64(x, w, EPS), torch.float32)
    r = torch.randn(x.shape)
    x0, r0 = x.clone(), r.clone()
    fused_add_rms_norm(x, r, w, EPS, backend="reference")
    torch.testing.assert_close(r, x0 + r0, rtol=0, atol=0)
    _assert_close(x, _plain_fp64(x0 + r0, w, EPS), torch.float32)


def test_empty_inputs():
    w = torch.ones(16)
    assert rms_norm(torch.empty(0, 16), w).shape == (0, 16)
    fused_add_rms_norm(torch.empty(0, 16), torch.empty(0, 16), w)


# ----------------------------------------------------------------------------- errors


def _xw(H=16, dtype=torch.float32):
    return torch.randn(4, H).to(dtype), torch.ones(H, dtype=dtype)


def test_error_last_stride():
    x = torch.randn(16, 4).t()
    with pytest.raises(ValueError, match=r"x: expected stride\(-1\) == 1"):
        rms_norm(x, torch.ones(16))
    x, w = _xw()
    with pytest.raises(ValueError, match=r"residual: expected stride\(-1\) == 1"):
        fused_add_rms_norm(x, torch.randn(16, 4).t(), w)
    with pytest.raises(ValueError, match=r"out: expected stride\(-1\) == 1"):
        rms_norm(x, w, out=torch.empty(16, 4).t())


def test_error_dtype_mismatch():
    x, w = _xw()
    with pytest.raises(TypeError, match="weight: expected dtype torch.float32"):
        rms_norm(x, w.bfloat16())
    with pytest.raises(TypeError, match="residual: expected dtype torch.float32"):
        fused_add_rms_norm(x, x.clone().half(), w)
    with pytest.raises(TypeError, match="out: expected dtype torch.float32"):
        rms_norm(x, w, out=torch.empty(4, 16, dtype=torch.float16))
    with pytest.raises(TypeError, match="x: expected dtype float16, bfloat16 or float32"):
        rms_norm(x.double(), w.double())
    with pytest.raises(TypeError, match="x: expected a torch.Tensor"):
        rms_norm([1.0, 2.0], w)


def test_error_size_mismatch():
    x, w = _xw()
    with pytest.raises(ValueError, match=r"weight: expected shape \(16,\)"):
        rms_norm(x, torch.ones(15))
    with pytest.raises(ValueError, match=r"weight: expected shape \(16,\)"):
        rms_norm(x, torch.ones(1, 16))
    with pytest.raises(ValueError, match=r"residual: expected shape \(4, 16\)"):
        fused_add_rms_norm(x, torch.randn(3, 16), w)
    with pytest.raises(ValueError, match=r"out: expected shape \(4, 16\)"):
        rms_norm(x, w, out=torch.empty(4, 17))
    with pytest.raises(ValueError, match="weight: expected a contiguous vector"):
        rms_norm(x, torch.ones(32)[::2])


def test_error_cpu_tensor_to_gpu_backends():
    x, w = _xw()
    for backend in ("cuda", "triton"):
        with pytest.raises(ValueError, match=f"backend '{backend}' needs CUDA tensors"):
            rms_norm(x, w, backend=backend)
        with pytest.raises(ValueError, match=f"backend '{backend}' needs CUDA tensors"):
            fused_add_rms_norm(x, x.clone(), w, backend=backend)
    with pytest.raises(ValueError, match="backend: expected one of"):
        rms_norm(x, w, backend="cutlass")


def test_backend_env_var(monkeypatch):
    x, w = _xw()
    monkeypatch.setenv("QLINEAR_NORM_BACKEND", "triton")
    with pytest.raises(ValueError, match="backend 'triton' needs CUDA tensors"):
        rms_norm(x, w)
    # the argument wins over the environment
    rms_norm(x, w, backend="reference")
    monkeypatch.setenv("QLINEAR_NORM_BACKEND", "bogus")
    with pytest.raises(ValueError, match="QLINEAR_NORM_BACKEND"):
        rms_norm(x, w)
    monkeypatch.setenv("QLINEAR_NORM_BACKEND", "auto")
    assert norm_ops.resolve_norm_backend(None, x) == "reference"
    monkeypatch.delenv("QLINEAR_NORM_BACKEND")
    assert norm_ops.resolve_norm_backend(None, x) == "reference"


def test_error_overlap():
    buf = torch.randn(4, 2112)
    w = torch.ones(512)
    # disjoint column slices of one buffer are fine (interleaved rows, no shared element)
    fused_add_rms_norm(buf[:, :512], buf[:, 1536:2048], w)
    with pytest.raises(ValueError, match="x and residual overlap"):
        fused_add_rms_norm(buf[:, :512], buf[:, 100:612], w)
    with pytest.raises(ValueError, match="x and residual overlap"):
        fused_add_rms_norm(buf[:, :512], buf[:, :512], w)
    # row-shifted: residual row i is x row i+1
    with pytest.raises(ValueError, match="x and residual overlap"):
        fused_add_rms_norm(buf[:3, :512], buf[1:, :512], w)
    flat = torch.randn(64)
    with pytest.raises(ValueError, match="x and residual overlap"):
        fused_add_rms_norm(flat[:32].view(2, 16), flat[8:40].view(2, 16), torch.ones(16))
    with pytest.raises(ValueError, match="out: overlaps x"):
        rms_norm(buf[:, :512], w, out=buf[:, 8:520])
    with pytest.raises(ValueError, match="internally overlapping"):
        fused_add_rms_norm(torch.randn(512).expand(4, 512), torch.randn(4, 512), w)


@pytest.mark.parametrize(
    "a_slice,b_slice,expected",
    [
        ((slice(None), slice(0, 64)), (slice(None), slice(64, 128)), False),
        ((slice(None), slice(0, 64)), (slice(None), slice(63, 127)), True),
        ((slice(0, 3), slice(0, 64)), (slice(3, 6), slice(0, 64)), False),
        ((slice(0, 3), slice(0, 64)), (slice(2, 5), slice(0, 64)), True),
        ((slice(0, 3), slice(100, 164)), (slice(1, 4), slice(0, 64)), False),
    ],
)
def test_may_overlap(a_slice, b_slice, expected):
    buf = torch.randn(6, 200)
    assert norm_ops._may_overlap(buf[a_slice], buf[b_slice]) is expected
    assert norm_ops._may_overlap(buf[b_slice], buf[a_slice]) is expected
    assert norm_ops._may_overlap(buf[a_slice], torch.randn(3, 64)) is False


# ----------------------------------------------------------------------------- custom ops


OPCHECK_CASES = {
    "contiguous": lambda: (torch.randn(5, 48), torch.randn(5, 48)),
    "strided": lambda: (torch.randn(5, 64)[:, 8:56], torch.randn(5, 80)[:, :48]),
    "3d": lambda: (torch.randn(2, 3, 48), torch.randn(3, 2, 48).transpose(0, 1)),
}


@pytest.mark.parametrize("case", sorted(OPCHECK_CASES))
def test_opcheck_rms_norm(case):
    x, _ = OPCHECK_CASES[case]()
    w = torch.randn(48)
    out = torch.empty(x.shape)
    torch.library.opcheck(torch.ops.qlinear.rms_norm.default, (out, x, w, EPS, "reference"))


@pytest.mark.parametrize("case", sorted(OPCHECK_CASES))
def test_opcheck_fused_add_rms_norm(case):
    x, r = OPCHECK_CASES[case]()
    w = torch.randn(48)
    torch.library.opcheck(torch.ops.qlinear.fused_add_rms_norm.default, (x, r, w, EPS, "reference"))


def test_torch_compile_traces_ops():
    w = torch.randn(48)

    def f(x, r):
        y = rms_norm(x, w, EPS, backend="reference")
        fused_add_rms_norm(x, r, w, EPS)  # backend chosen while tracing (env var, device)
        return y

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    x, r = torch.randn(4, 48), torch.randn(4, 48)
    xc, rc = x.clone(), r.clone()
    y = compiled(x, r)
    ye = f(xc, rc)
    torch.testing.assert_close(y, ye)
    torch.testing.assert_close(x, xc)
    torch.testing.assert_close(r, rc)


# ----------------------------------------------------------------------------- module


@pytest.mark.parametrize("dtype", DTYPES)
def test_module_forward(dtype):
    H = 40
    norm = RMSNorm(H, eps=1e-5, params_dtype=dtype, backend="reference")
    assert norm.weight.dtype == dtype and norm.weight.shape == (H,) and not norm.weight.requires_grad
    norm.weight.weight_loader(norm.weight, _weight(H, torch.float32))
    x, _ = _rows(3, H, dtype, strided=True, seed=7)
    _assert_close(norm(x), _plain_fp64(x, norm.weight, 1e-5), dtype)
    r, _ = _rows(3, H, dtype, strided=False, seed=8)
    x0, r0 = x.clone(), r.clone()
    xo, ro = norm(x, r)
    assert xo is x and ro is r
    new_r = (x0.double() + r0.double()).to(dtype)
    torch.testing.assert_close(r, new_r, rtol=0, atol=0)
    _assert_close(x, _plain_fp64(new_r, norm.weight, 1e-5), dtype)
    assert "40" in repr(norm)


def test_weight_loader():
    norm = RMSNorm(8)  # bf16 by default
    loaded = torch.arange(8, dtype=torch.float32) / 7
    assert norm.weight.weight_loader is rms_norm_weight_loader
    norm.weight.weight_loader(norm.weight, loaded)
    torch.testing.assert_close(norm.weight, loaded.bfloat16(), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"expected shape \(8,\), got \(9,\)"):
        rms_norm_weight_loader(norm.weight, torch.ones(9))
    with pytest.raises(ValueError, match="not sharded"):
        rms_norm_weight_loader(norm.weight, torch.ones(8), 0)
    with pytest.raises(TypeError, match="floating-point"):
        rms_norm_weight_loader(norm.weight, torch.ones(8, dtype=torch.int32))
    with pytest.raises(ValueError, match="hidden_size"):
        RMSNorm(0)


# ----------------------------------------------------------------------------- CUDA extension loader


def test_cuda_ext_loader_without_cuda(monkeypatch, tmp_path):
    from qlinear.kernels import cuda_ext

    src = cuda_ext.csrc_dir()
    assert src is not None and (src / "norm_launch.cu").is_file()
    monkeypatch.setenv("QLINEAR_BUILD_DIR", str(tmp_path))
    d = cuda_ext._build_dir(src)
    assert d.parent == tmp_path and d.name.startswith(cuda_ext.EXT_NAME)
    assert cuda_ext._build_dir(src) == d  # same sources and flags: same cache folder
    if torch.version.cuda is None:
        assert cuda_ext.is_available() is False
        assert "without CUDA" in cuda_ext.failure_reason()


def test_cuda_ext_ops_or_none_warns_once_per_fallback(monkeypatch):
    """The one place the ops ask for the extension: a failed load is remembered (failed(), no new
    build attempt), and each fallback text is warned about once per process."""
    import warnings

    from qlinear.kernels import cuda_ext

    monkeypatch.setattr(cuda_ext, "_loaded", False)
    monkeypatch.setattr(cuda_ext, "_failure", "RuntimeError: no nvcc here")
    monkeypatch.setattr(cuda_ext, "_warned", set())
    monkeypatch.setattr(cuda_ext, "load", lambda *a, **k: pytest.fail("a remembered failure must not rebuild"))
    assert cuda_ext.failed()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            assert cuda_ext.ops_or_none("op A uses Triton") is None
            assert cuda_ext.ops_or_none("op B uses Triton") is None
    texts = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert texts == ["qlinear: CUDA extension unavailable (RuntimeError: no nvcc here); op A uses Triton",
                     "qlinear: CUDA extension unavailable (RuntimeError: no nvcc here); op B uses Triton"]


def test_bench_gap4_points_are_launchable_knobs():
    """bench_rms_norm --focus gaps4: every CUDA point is a 7-int NormConfig; the mbarrier cluster
    points (hints bit 64 + a cluster) give each CTA of a 7168-wide bf16 row enough threads x
    vectors for its piece (otherwise the launcher would silently fall back and the point would
    time another kernel), and the three open cases are the ones timed."""
    import importlib.util
    import pathlib
    import sys

    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_rms_norm.py"
    spec = importlib.util.spec_from_file_location("bench_rms_norm_cpu", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.modules.pop(spec.name, None)
    cases = bench.gap4_cases()
    assert [c.name for c, *_ in cases] == ["latency 16x7168", "contig 32768x7168", "fused 32768x7168"]
    for c, _, _, points in cases:
        assert len(set(points)) == len(points), c.name
        for kind, knobs in points:
            assert kind in ("cuda", "triton")
            if kind != "cuda":
                continue
            assert len(knobs) == 7 and all(isinstance(k, int) for k in knobs)
            nv, thr, _, _, _, cs, hints = knobs
            if cs and hints & 64:
                assert cs in (2, 4, 8, 16) and thr % 32 == 0 and nv in (1, 2)
                per_cta = -(-(c.hidden // 8) // cs)
                assert nv * thr >= per_cta, knobs
                if hints & 128:
                    assert cs * thr // 32 <= 256, knobs  # kClusterSlots
