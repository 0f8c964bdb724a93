"""Backend choice of ``rms_norm_quant_fp8`` without a GPU: "cuda" is a known backend, CPU tensors
go to the reference unless told otherwise, and asking for "cuda" with CPU tensors or an
unsupported weight dtype fails with a clear error (the kernels are tested in
tests/gpu/test_norm_quant_cuda_gpu.py)."""

import pytest
import torch

from qlinear.ops import fp8 as ops
from qlinear.reference import fp8 as ref


def _xw(M=3, K=256, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(0)
    return torch.randn(M, K, generator=g).to(dtype), (torch.rand(K, generator=g) + 0.5).to(dtype)


def test_cuda_is_a_backend():
    assert "cuda" in ops._NORM_BACKENDS


def test_cpu_auto_is_reference(monkeypatch):
    monkeypatch.delenv("QLINEAR_RMS_NORM_QUANT_BACKEND", raising=False)
    x, w = _xw()
    q, s = ops.rms_norm_quant_fp8(x, w)
    qr, sr = ref.rms_norm_quant_fp8_ref(x, w)
    assert torch.equal(q.view(torch.uint8), qr.view(torch.uint8)) and torch.equal(s, sr)


def test_cuda_backend_needs_cuda_tensors(monkeypatch):
    x, w = _xw()
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA tensors"):
        ops.rms_norm_quant_fp8(x, w, backend="cuda")
    monkeypatch.setenv("QLINEAR_RMS_NORM_QUANT_BACKEND", "cuda")
    with pytest.raises(ValueError, match="backend 'cuda' needs CUDA tensors"):
        ops.rms_norm_quant_fp8(x, w)


def test_cuda_backend_weight_dtype():
    x, w = _xw()
    with pytest.raises(TypeError, match="weight: backend 'cuda' reads"):
        ops.rms_norm_quant_fp8(x, w.double(), backend="cuda")


def test_gpu_default_falls_back_for_other_weight_dtypes():
    # no extension build is attempted for a weight the kernels do not read
    assert ops._norm_quant_gpu_default(torch.empty(4, dtype=torch.float64)) == "triton"


def test_gpu_default_takes_triton_for_few_rows():
    # measured faster there (NORM_QUANT_TRITON_MAX_M); decided before the extension is asked about
    w_short, w_long = torch.empty(1536, dtype=torch.bfloat16), torch.empty(16384, dtype=torch.bfloat16)
    assert ops._norm_quant_gpu_default(w_short, 1) == "triton"
    assert ops._norm_quant_gpu_default(w_short, 256) == "triton"
    assert ops._norm_quant_gpu_default(w_long, 1024) == "triton"
    assert ops._norm_quant_triton_max_m(1536) == 256 and ops._norm_quant_triton_max_m(16384) == 1024
    # the MLA norms' 7168: the CUDA block-per-row kernel at every M (its PDL trigger wins the norm -> GEMM chain)
    assert ops._norm_quant_triton_max_m(7168) == 0 and ops._norm_quant_triton_max_m(8192) == 0
    # rows of 2049 .. 4096 run the launcher's warp-per-row register kernel: Triton as before
    assert ops._norm_quant_triton_max_m(4096) == 1024 and ops._norm_quant_triton_max_m(3072) == 1024


def test_gpu_default_keeps_triton_where_the_block_kernel_does_not_apply():
    # at 2048 < K <= 8192 "cuda" means the block-per-row kernel; operands it does not take would get the
    # launcher's slow two-pass kernel, so the default stays Triton for them (decided before the extension)
    w = torch.randn(7168, dtype=torch.bfloat16)
    base = torch.randn(3, 7168 + 4, dtype=torch.bfloat16)
    x = base[:, :7168]
    assert ops._norm_quant_cta_ok(base[:, :7168].contiguous(), w, None, 128)
    cases = {
        "row stride of 7172 elements (14344 bytes)": (x, None, 128),
        "x one element in": (base[:, 1:7169], None, 128),
        "fp32 x": (x.contiguous().float(), None, 128),
        "group 96 (12 lanes)": (x.contiguous(), None, 96),
        "residual rows misaligned": (x.contiguous(), base[:, 1:7169], 128),
    }
    for what, (xi, res, group) in cases.items():
        assert not ops._norm_quant_cta_ok(xi, w, res, group), what
        assert ops._norm_quant_gpu_default(w, 3, xi, res, group) == "triton", what
        assert ops._norm_quant_gpu_default(w, 4096, xi, res, group) == "triton", what
    assert not ops._norm_quant_cta_ok(x.contiguous(), torch.randn(7169, dtype=torch.bfloat16)[1:], None, 128)


def test_gpu_default_one_row_of_mla_width_takes_triton_with_an_early_trigger(monkeypatch):
    # NORM_QUANT_TRITON_EARLY: one or two rows of 4096 < K <= 8192 (any operands: Triton takes them all),
    # decided before the weight dtype or the extension; three rows and other widths keep their choice
    for k in (4097, 7168, 8192):
        assert ops._norm_quant_gpu_default(torch.empty(k, dtype=torch.bfloat16), 1) == "triton-early", k
        assert ops._norm_quant_gpu_default(torch.empty(k, dtype=torch.bfloat16), 2) == "triton-early", k
        assert ops._norm_quant_gpu_default(torch.empty(k, dtype=torch.float64), 1) == "triton-early", k
        assert ops._norm_quant_gpu_default(torch.empty(k, dtype=torch.float64), 3) == "triton", k
    assert ops._norm_quant_gpu_default(torch.empty(4096, dtype=torch.bfloat16), 1) == "triton"
    assert ops._norm_quant_gpu_default(torch.empty(16384, dtype=torch.bfloat16), 1) == "triton"
    # the internal name reaches the Triton launch as pdl_trigger="early" (the kernel wrapper, faked)
    seen = []

    class _K:
        @staticmethod
        def rms_norm_quant_fp8(x, weight, eps, group_size, **kw):
            seen.append(kw.get("pdl_trigger"))
            return torch.zeros(x.shape, dtype=ops.FP8_E4M3), torch.zeros(x.shape[0], 1)

    monkeypatch.setattr(ops, "_kernels", lambda: _K)
    x, w = torch.randn(1, 256), torch.randn(256)
    ops._norm_quant_op(x, w, 1e-6, 256, False, "triton-early")
    ops._norm_quant_op(x, w, 1e-6, 256, False, "triton")
    ops._add_norm_quant_op(x, x.clone(), w, 1e-6, 256, False, "triton-early")
    assert seen == ["early", None, "early"]
    # a caller cannot name it
    with pytest.raises(ValueError, match="cuda"):
        ops.rms_norm_quant_fp8(x, w, backend="triton-early")


def test_unknown_backend_names_the_choices():
    x, w = _xw()
    with pytest.raises(ValueError, match="cuda"):
        ops.rms_norm_quant_fp8(x, w, backend="cutlass")
