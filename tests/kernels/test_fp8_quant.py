"""CPU tests of the FP8 references and ops (reference backend): the quantizer against a plain
per-group loop written here, the dequantizations against explicit block loops, the linear ops
against float64 products, the custom ops through ``torch.library.opcheck``, and the dispatch."""

import pytest
import torch

from qlinear._utils import FP8_E4M3, cdiv
from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref

MS = [1, 3, 17]
KS = [128, 200, 424]
GROUPS = [32, 128]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
STRIDED = [False, True]


def _rows(M: int, K: int, dtype: torch.dtype, strided: bool, seed: int = 0, scale: float = 3.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(M, K + 37 if strided else K, generator=g) * scale
    # A few outliers so that groups get different scales.
    base[:, ::29] *= 40
    x = base.to(dtype)[:, 5 : 5 + K] if strided else base.to(dtype)
    assert (x.stride(0) != K) == strided
    return x


def _plain_group_quant(x: torch.Tensor, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Independent implementation: one explicit loop over the column groups of each row."""
    M, K = x.shape
    qs, ss = [], []
    for start in range(0, K, g):
        chunk = x[:, start : start + g].double()
        amax = chunk.abs().max(dim=1).values.float()
        s = torch.where(amax > 1e-10, amax, torch.full_like(amax, 1e-10)) / 448.0
        y = chunk.float() / s[:, None]
        y = torch.minimum(torch.maximum(y, torch.tensor(-448.0)), torch.tensor(448.0))
        qs.append(y.to(FP8_E4M3))
        ss.append(s)
    return torch.cat(qs, dim=1), torch.stack(ss, dim=1)


def _bits(q: torch.Tensor) -> torch.Tensor:
    return q.view(torch.uint8)


@pytest.mark.parametrize("strided", STRIDED)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("M", MS)
def test_group_quant_ref_matches_plain(M, K, group, dtype, strided):
    x = _rows(M, K, dtype, strided, seed=M * 1000 + K)
    q, s = ref.per_token_group_quant_fp8_ref(x, group)
    qp, sp = _plain_group_quant(x, group)
    assert q.shape == (M, K) and q.dtype == FP8_E4M3 and s.shape == (M, cdiv(K, group))
    assert torch.equal(s, sp)
    assert torch.equal(_bits(q), _bits(qp))
    # Round trip: each element within half an e4m3 step (2^-4 relative) of its group's scale.
    deq = ref.dequant_fp8_group_ref(q, s, group)
    err = (deq - x.float()).abs()
    bound = s.repeat_interleave(group, 1)[:, :K] * 448.0 * 2.0**-4
    assert torch.all(err <= bound + 1e-30)


@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("strided", STRIDED)
@pytest.mark.parametrize("K", KS)
@pytest.mark.parametrize("M", MS)
def test_group_quant_op_reference_backend(M, K, strided, column_major):
    x = _rows(M, K, torch.bfloat16, strided, seed=7 + M)
    q, s = ops.per_token_group_quant_fp8(x, 128, column_major_scales=column_major, backend="reference")
    qp, sp = _plain_group_quant(x, 128)
    assert torch.equal(_bits(q), _bits(qp)) and torch.equal(s, sp)
    G = cdiv(K, 128)
    assert s.stride() == ((1, M) if column_major else (G, 1)) or M == 1 or G == 1


def test_group_quant_leading_dims():
    x = _rows(6, 200, torch.float16, False).reshape(2, 3, 200)
    q, s = ops.per_token_group_quant_fp8(x, 128, backend="reference")
    qp, sp = _plain_group_quant(x.reshape(6, 200), 128)
    assert q.shape == (2, 3, 200) and s.shape == (2, 3, 2)
    assert torch.equal(_bits(q.reshape(6, 200)), _bits(qp)) and torch.equal(s.reshape(6, 2), sp)


@pytest.mark.parametrize("K", [7, 200, 424])
@pytest.mark.parametrize("M", MS)
def test_per_token_quant(M, K):
    x = _rows(M, K, torch.bfloat16, True, seed=K)
    q, s = ops.per_token_quant_fp8(x, backend="reference")
    qp, sp = _plain_group_quant(x, K)
    assert s.shape == (M, 1)
    assert torch.equal(_bits(q), _bits(qp)) and torch.equal(s, sp)


def test_zero_group_gets_tiny_scale():
    x = torch.randn(3, 256)
    x[1, 128:] = 0
    q, s = ref.per_token_group_quant_fp8_ref(x, 128)
    assert s[1, 1].item() == pytest.approx(1e-10 / 448.0, rel=1e-6)
    assert torch.all(q[1, 128:].float() == 0)
    assert torch.isfinite(s).all()


def _blocks(N: int, K: int, block: tuple[int, int], seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(N, K, generator=g) * 40).to(FP8_E4M3)
    scale = torch.rand(cdiv(N, block[0]), cdiv(K, block[1]), generator=g) * 1e-2 + 1e-3
    return w, scale


@pytest.mark.parametrize("block", [(128, 128), (64, 32)])
@pytest.mark.parametrize("K", [128, 200])
@pytest.mark.parametrize("N", [96, 257])
def test_dequant_block_matches_loop(N, K, block):
    w, scale = _blocks(N, K, block, seed=N + K)
    got = ref.dequant_fp8_block_ref(w, scale, block)
    want = torch.empty(N, K)
    for i in range(scale.shape[0]):
        for j in range(scale.shape[1]):
            rs = slice(i * block[0], (i + 1) * block[0])
            cs = slice(j * block[1], (j + 1) * block[1])
            want[rs, cs] = w[rs, cs].float() * scale[i, j]
    assert torch.equal(got, want)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 96, 200), (5, 257, 384), (33, 130, 128)])
def test_block_linear_reference(shape, dtype, bias):
    M, N, K = shape
    x = _rows(M, K, dtype, True, seed=M + N, scale=1.0)
    w, scale = _blocks(N, K, (128, 128), seed=N)
    b = (torch.randn(N) * 0.1).to(dtype) if bias else None
    out = ops.fp8_block_linear(x, w, scale, (128, 128), b, backend="reference")
    assert out.shape == (M, N) and out.dtype == dtype
    qp, sp = _plain_group_quant(x, 128)
    a = qp.double() * sp.double().repeat_interleave(128, 1)[:, :K]
    wd = w.double() * scale.double().repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
    want = a @ wd.t() + (b.double() if bias else 0)
    assert _rel(out, want) < 8e-3
    # And close to the unquantized product (FP8 quantization error only).
    assert _rel(out, x.double() @ wd.t() + (b.double() if bias else 0)) < 6e-2


def test_block_linear_leading_dims():
    x = torch.randn(2, 3, 256, dtype=torch.bfloat16)
    w, scale = _blocks(160, 256, (128, 128))
    out = ops.fp8_block_linear(x, w, scale, backend="reference")
    flat = ops.fp8_block_linear(x.reshape(6, 256), w, scale, backend="reference")
    assert out.shape == (2, 3, 160) and torch.equal(out.reshape(6, 160), flat)


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("scale_kind", ["tensor", "channel", "channel_2d"])
@pytest.mark.parametrize("bias", [False, True])
def test_scaled_linear_reference(static, scale_kind, bias):
    M, N, K = 7, 48, 80
    x = _rows(M, K, torch.bfloat16, False, seed=3, scale=1.0)
    g = torch.Generator().manual_seed(1)
    w = (torch.randn(N, K, generator=g) * 30).to(FP8_E4M3)
    ws = {"tensor": torch.tensor([2e-3]), "channel": torch.rand(N, generator=g) * 1e-2 + 1e-3}
    ws["channel_2d"] = ws["channel"].reshape(N, 1)
    wscale = ws[scale_kind]
    iscale = torch.tensor([x.float().abs().max().item() / 448.0]) if static else None
    b = torch.randn(N).to(torch.bfloat16) if bias else None
    out = ops.fp8_scaled_linear(x, w, wscale, iscale, b, backend="reference")
    if static:
        qa = torch.clamp(x.double() / iscale.double(), -448, 448).float().to(FP8_E4M3).double() * iscale.double()
    else:
        qp, sp = _plain_group_quant(x, K)
        qa = qp.double() * sp.double()
    wd = w.double() * wscale.double().reshape(-1, 1)
    want = qa @ wd.t() + (b.double() if bias else 0)
    assert out.shape == (M, N) and out.dtype == torch.bfloat16
    assert _rel(out, want) < 8e-3


def _plain_rms_norm_quant(x, w, eps, group, residual=None):
    h = x.float()
    if residual is not None:
        h = (x.float() + residual.float()).to(x.dtype).float()
    ms = (h * h).sum(dim=1, keepdim=True) / h.shape[1]
    y = h * (1.0 / torch.sqrt(ms + eps)) * w.float()
    return _plain_group_quant(y, group), h.to(x.dtype)


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("K", [96, 424])
@pytest.mark.parametrize("M", MS)
def test_rms_norm_quant_reference(M, K, dtype, residual):
    x = _rows(M, K, dtype, True, seed=K + M, scale=1.0)
    w = (torch.rand(K) + 0.5).to(dtype)
    res = (torch.randn(M, K) * 2).to(dtype) if residual else None
    res_before = res.clone() if residual else None
    q, s = ops.rms_norm_quant_fp8(x, w, 1e-6, 128, residual=res, backend="reference")
    (qp, sp), h = _plain_rms_norm_quant(x, w, 1e-6, 128, res_before)
    if residual:
        assert torch.equal(res, h)
    # rsqrt vs 1/sqrt and the summation order may move a value by an ulp: compare codes within 1.
    assert torch.allclose(s, sp, rtol=1e-5, atol=0)
    diff = (_bits(q).int() - _bits(qp).int()).abs()
    assert diff.max() <= 1 and (diff > 0).float().mean() < 0.01


@pytest.mark.parametrize("column_major", [False, True])
def test_rms_norm_quant_column_major(column_major):
    x = torch.randn(5, 300, dtype=torch.bfloat16)
    w = torch.rand(300, dtype=torch.bfloat16) + 0.5
    q1, s1 = ops.rms_norm_quant_fp8(x, w, backend="reference")
    q2, s2 = ops.rms_norm_quant_fp8(x, w, column_major_scales=column_major, backend="reference")
    assert torch.equal(_bits(q1), _bits(q2)) and torch.equal(s1, s2)
    assert s2.stride() == ((1, 5) if column_major else (3, 1))


# ---- custom ops: schema / fake / dispatch checks --------------------------------------------


# test_schema compares every input before/after with torch.allclose, which has no CPU kernel for
# float8 tensors: the ops taking an e4m3 weight run the other three checks.
_NO_SCHEMA = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


def _opcheck(op, args, fp8_inputs=False):
    if fp8_inputs:
        torch.library.opcheck(op, args, test_utils=_NO_SCHEMA)
    else:
        torch.library.opcheck(op, args)


def test_opcheck_quant():
    x = _rows(5, 200, torch.bfloat16, True)
    _opcheck(torch.ops.qlinear.per_token_group_quant_fp8.default, (x, 128, False, "reference"))
    _opcheck(torch.ops.qlinear.per_token_group_quant_fp8.default, (x, 64, True, "reference"))


def test_opcheck_block_linear():
    x = _rows(3, 256, torch.bfloat16, False)
    w, scale = _blocks(96, 256, (128, 128))
    b = torch.randn(96).to(torch.bfloat16)
    _opcheck(torch.ops.qlinear.fp8_block_linear.default, (x, w, scale, 128, 128, b, "reference"), True)
    _opcheck(torch.ops.qlinear.fp8_block_linear.default, (x, w, scale, 128, 128, None, "reference"), True)


def test_opcheck_scaled_linear():
    x = _rows(3, 64, torch.float16, False)
    w = (torch.randn(32, 64) * 20).to(FP8_E4M3)
    _opcheck(torch.ops.qlinear.fp8_scaled_linear.default, (x, w, torch.rand(32) * 1e-2, None, None, "reference"), True)
    _opcheck(
        torch.ops.qlinear.fp8_scaled_linear.default,
        (x, w, torch.tensor([1e-2]), torch.tensor([0.02]), torch.randn(32).half(), "reference"),
        True,
    )


def test_opcheck_norm_quant():
    x = _rows(4, 200, torch.bfloat16, True)
    w = torch.rand(200, dtype=torch.bfloat16) + 0.5
    _opcheck(torch.ops.qlinear.rms_norm_quant_fp8.default, (x, w, 1e-6, 128, True, "reference"))
    res = torch.randn(4, 200, dtype=torch.bfloat16)
    _opcheck(torch.ops.qlinear.fused_add_rms_norm_quant_fp8.default, (x, res, w, 1e-6, 128, False, "reference"))


# ---- dispatch and argument checks -------------------------------------------------------------


def test_cpu_dispatch_is_reference(monkeypatch):
    monkeypatch.delenv("QLINEAR_FP8_BLOCK_BACKEND", raising=False)
    x = torch.randn(2, 256, dtype=torch.bfloat16)
    w, _ = _blocks(128, 256, (128, 128))
    assert ops.fp8_block_backend(x, w) == "reference"
    assert ops.fp8_scaled_backend(x, w) == "reference"
    monkeypatch.setenv("QLINEAR_FP8_BLOCK_BACKEND", "triton")
    assert ops.fp8_block_backend(x, w) == "triton"
    monkeypatch.setenv("QLINEAR_FP8_BLOCK_BACKEND", "cutlass")
    with pytest.raises(ValueError, match="QLINEAR_FP8_BLOCK_BACKEND"):
        ops.fp8_block_backend(x, w)


def test_quant_cuda_backend_off_gpu(monkeypatch):
    """The CUDA quantizer is a choice only for CUDA tensors: CPU tensors take the reference unless a GPU backend
    is named, and naming "cuda" for them says what to use instead; the launcher's conditions are read from the
    tensor (the auto dispatch's check), whatever its device."""
    monkeypatch.delenv("QLINEAR_FP8_QUANT_BACKEND", raising=False)
    x = torch.randn(3, 256, dtype=torch.bfloat16)
    q, s = ops.per_token_group_quant_fp8(x, 128)
    qr, sr = ref.per_token_group_quant_fp8_ref(x, 128)
    assert torch.equal(q.view(torch.uint8), qr.view(torch.uint8)) and torch.equal(s, sr)
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA tensors"):
        ops.per_token_group_quant_fp8(x, 128, backend="cuda")
    monkeypatch.setenv("QLINEAR_FP8_QUANT_BACKEND", "cuda")
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA tensors"):
        ops.per_token_group_quant_fp8(x, 128)
    ok = ops._cuda_quant_ok
    assert not ok(x, 128)  # a CPU tensor
    cuda_like = type("T", (), {"is_cuda": True, "shape": (3, 256), "element_size": lambda self: 2,
                               "stride": lambda self, d=None: (256, 1)[d], "data_ptr": lambda self: 4096})()
    assert ok(cuda_like, 128) and ok(cuda_like, 8) and ok(cuda_like, 256)
    assert not ok(cuda_like, 96) and not ok(cuda_like, 4) and not ok(cuda_like, 512)
    cuda_like.data_ptr = lambda: 4098
    assert not ok(cuda_like, 128) and ok(cuda_like, 128, check_pointers=False)


def test_dispatch_table_is_ordered():
    for rules in ops.FP8_BLOCK_DISPATCH.values():
        bounds = [r.max_m for r in rules]
        assert bounds == sorted(bounds)
        assert all(r.backend in ("scaled_mm", "triton") for r in rules)
    assert ops._table_backend(1, 2112, 7168) in ("scaled_mm", "triton")
    assert ops._table_backend(1 << 20, 7168, 16384) == ops.FP8_BLOCK_DISPATCH[None][-1].backend


def test_argument_errors():
    x = torch.randn(2, 256, dtype=torch.bfloat16)
    w, scale = _blocks(128, 256, (128, 128))
    with pytest.raises(TypeError, match="weight"):
        ops.fp8_block_linear(x, w.float(), scale, backend="reference")
    with pytest.raises(ValueError, match="weight_scale_inv"):
        ops.fp8_block_linear(x, w, scale[:, :1], backend="reference")
    with pytest.raises(ValueError, match="weight_scale_inv"):
        ops.fp8_block_linear(x, w, scale.double(), backend="reference")
    with pytest.raises(ValueError, match="stride"):
        ops.fp8_block_linear(x.t().contiguous().t(), w, scale, backend="reference")
    with pytest.raises(ValueError, match="bias"):
        ops.fp8_block_linear(x, w, scale, bias=torch.randn(128), backend="reference")
    with pytest.raises(ValueError, match="backend"):
        ops.fp8_block_linear(x, w, scale, backend="cublas")
    with pytest.raises(ValueError, match="scaled_mm"):
        ops.fp8_block_linear(x, w, _blocks(128, 256, (64, 128))[1], (64, 128), backend="scaled_mm")
    with pytest.raises(TypeError, match="x"):
        ops.per_token_group_quant_fp8(x.to(torch.int32), backend="reference")
    with pytest.raises(ValueError, match="group_size"):
        ops.per_token_group_quant_fp8(x, 96, backend="triton")
    with pytest.raises(ValueError, match="weight_scale"):
        ops.fp8_scaled_linear(x, w, torch.rand(3), backend="reference")
    with pytest.raises(ValueError, match="residual"):
        ops.rms_norm_quant_fp8(x, torch.ones(256), residual=torch.zeros(2, 256), backend="reference")
