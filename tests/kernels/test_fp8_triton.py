"""The FP8 Triton kernels under ``TRITON_INTERPRET=1`` on small shapes, against the references.

The interpreter must be switched on before triton is imported, and that must not leak into the
other test modules of the session, so every case runs in ONE child process (this file run as a
script with ``--worker``); each pytest case then checks its own entry of the child's JSON report.
Cases: quantizer bit-exact (strided rows, ragged last group, padded rows, column-major scales,
per-token); GEMM vs the fp32 GEMM of the same quantized operands (ragged M / N / K, split-K on and
off, bias, bf16 / fp16 / fp32 out); the GEMM with the activation quantization fused in (same bits as quantize-then-GEMM); the
quantizer with several rows per program; the op ``fp8_block_linear(backend="triton")`` on strided rows;
``fp8_block_linear_quantized(backend="triton")`` on given codes (strided, row- / column-major scales) against
the fp32 GEMM of those codes;
the fused RMSNorm -> FP8 (with and without residual).
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]

# (M, K, group, dtype, strided, column_major, pad_rows_to)
QUANT_CASES = [
    (1, 128, 128, "bfloat16", False, False, 1),
    (5, 300, 128, "bfloat16", True, True, 4),
    (7, 200, 32, "float16", True, False, 1),
    (33, 1000, 128, "float32", False, True, 8),
    (3, 200, 200, "bfloat16", True, False, 1),  # per-token: one non-power-of-two group per row
]
# (M, N, K, (bn, bk), split_k, block_m, block_n, out dtype, bias)
GEMM_CASES = [
    (1, 200, 320, (128, 128), 1, 16, 64, "bfloat16", False),
    (5, 200, 320, (128, 128), 3, 16, 64, "bfloat16", True),
    (17, 96, 512, (128, 128), 2, 16, 32, "float16", False),
    (33, 257, 384, (128, 128), 1, 32, 128, "float32", True),
    (9, 130, 200, (64, 64), 4, 16, 64, "bfloat16", False),
    (70, 64, 256, (32, 128), 1, 64, 64, "bfloat16", False),  # BLOCK_N wider than a scale block
]
# (M, N, K, (bn, bk), split_k, block_n, ragged-K strided x): activations quantized inside the GEMM
FUSED_CASES = [
    (1, 200, 320, (128, 128), 3, 64),
    (5, 96, 200, (128, 128), 1, 32),
    (17, 130, 256, (64, 64), 2, 64),
]
# (M, K, rows per program, pad_rows_to)
QUANT_ROW_CASES = [(5, 1000, 4, 8), (16, 384, 16, 1), (3, 200, 2, 4)]
# (M, N, K, strided, backend-level split check)
LINEAR_CASES = [
    (3, 200, 320, True),
    (20, 130, 256, False),
]
# (M, N, K, column-major scales, strided codes, out dtype): fp8_block_linear_quantized(backend="triton")
QLINEAR_CASES = [
    (3, 200, 320, False, True, "bfloat16"),
    (8, 130, 256, True, False, "float32"),
]
# (M, K, group, dtype, residual, column_major, strided)
NORM_CASES = [
    (4, 300, 128, "bfloat16", False, False, True),
    (6, 512, 128, "bfloat16", True, True, True),
    (3, 200, 64, "float16", True, False, False),
    (5, 96, 128, "float32", False, True, True),
]


def _ids(prefix, cases):
    return [f"{prefix}-{i}" for i in range(len(cases))]


# ------------------------------------------------------------------------------------------
# worker side (child process, TRITON_INTERPRET=1)
# ------------------------------------------------------------------------------------------


def _rows(M, K, dtype, strided, seed):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(M, K + 40 if strided else K, generator=g) * 2
    base[:, ::23] *= 30
    base = base.to(getattr(torch, dtype))
    x = base[:, 3 : 3 + K] if strided else base
    assert (x.stride(0) != K) == strided
    return x


def _run_quant(kern, ref, M, K, group, dtype, strided, column_major, pad):
    x = _rows(M, K, dtype, strided, seed=M + K)
    q, s = kern.per_token_group_quant_fp8(x, group, column_major_scales=column_major, pad_rows_to=pad)
    qr, sr = ref.per_token_group_quant_fp8_ref(x, group)
    M_pad = -(-M // pad) * pad
    assert q.shape == (M_pad, K) and s.shape == (M_pad, sr.shape[1]), (q.shape, s.shape)
    if column_major and M_pad > 1 and s.shape[1] > 1:
        assert s.stride() == (1, M_pad), s.stride()
    assert torch.equal(q[:M].view(torch.uint8), qr.view(torch.uint8)), "codes differ"
    assert torch.equal(s[:M], sr), "scales differ"
    assert torch.all(q[M:].float() == 0), "pad rows not zero"


def _run_gemm(kern, ref, M, N, K, block, split, bm, bn, out_dtype, bias):
    g = torch.Generator().manual_seed(M * 7 + N)
    x = torch.randn(M, K, generator=g)
    q, s = ref.per_token_group_quant_fp8_ref(x, block[1])
    w = (torch.randn(N, K, generator=g) * 50).to(torch.float8_e4m3fn)
    ws = torch.rand(-(-N // block[0]), -(-K // block[1]), generator=g) * 1e-2 + 1e-3
    dt = getattr(torch, out_dtype)
    b = (torch.randn(N, generator=g)).to(dt) if bias else None
    cfg = kern.GemmConfig(block_m=bm, block_n=bn, split_k=split)
    s_cm = s.t().contiguous().t()
    out = kern.fp8_block_gemm(q, s_cm, w, ws, block, dt, b, config=cfg)
    want = ref.fp8_block_gemm_ref(q, s, w, ws, block, torch.float32, b)
    assert out.shape == (M, N) and out.dtype == dt
    rel = ((out.float() - want).norm() / want.norm()).item()
    assert rel < (1e-5 if dt == torch.float32 else 1e-2), f"rel err {rel}"
    # Row-major scales give the same result.
    out2 = kern.fp8_block_gemm(q, s, w, ws, block, dt, b, config=cfg)
    assert torch.equal(out, out2)


def _run_fused(kern, ref, M, N, K, block, split, bn):
    """fuse_quant=True: the same output bits as quantize-then-GEMM with the same config."""
    x = _rows(M, K, "bfloat16", True, seed=M + K)
    g = torch.Generator().manual_seed(N)
    w = (torch.randn(N, K, generator=g) * 50).to(torch.float8_e4m3fn)
    ws = torch.rand(-(-N // block[0]), -(-K // block[1]), generator=g) * 1e-2 + 1e-3
    cfg = kern.GemmConfig(block_m=16, block_n=bn, split_k=split)
    fused = kern.fp8_block_linear_triton(x, w, ws, block, config=cfg, fuse_quant=True)
    plain = kern.fp8_block_linear_triton(x, w, ws, block, config=cfg, fuse_quant=False)
    assert torch.equal(fused, plain), "fused differs from quantize-then-GEMM"
    want = ref.fp8_block_linear_ref(x.float(), w, ws, block)
    rel = ((fused.float() - want).norm() / want.norm()).item()
    assert rel < 1e-2, f"rel err {rel}"


def _run_quant_rows(kern, ref, M, K, rows, pad):
    x = _rows(M, K, "bfloat16", True, seed=M * K)
    q, s = kern.per_token_group_quant_fp8(x, 128, column_major_scales=True, pad_rows_to=pad, rows_per_prog=rows)
    qr, sr = ref.per_token_group_quant_fp8_ref(x, 128)
    assert torch.equal(q[:M].view(torch.uint8), qr.view(torch.uint8)), "codes differ"
    assert torch.equal(s[:M], sr), "scales differ"
    assert torch.all(q[M:].float() == 0), "pad rows not zero"


def _run_linear(ops, ref, M, N, K, strided):
    x = _rows(M, K, "bfloat16", strided, seed=N)
    g = torch.Generator().manual_seed(K)
    w = (torch.randn(N, K, generator=g) * 50).to(torch.float8_e4m3fn)
    ws = torch.rand(-(-N // 128), -(-K // 128), generator=g) * 1e-2 + 1e-3
    out = ops.fp8_block_linear(x, w, ws, backend="triton")
    want = ops.fp8_block_linear(x, w, ws, backend="reference")
    rel = ((out.float() - want.float()).norm() / want.float().norm()).item()
    assert rel < 1e-2, f"rel err {rel}"
    qt, st = ops.per_token_group_quant_fp8(x, 128, backend="triton")
    qr, sr = ops.per_token_group_quant_fp8(x, 128, backend="reference")
    assert torch.equal(qt.view(torch.uint8), qr.view(torch.uint8)) and torch.equal(st, sr)


def _run_qlinear(ops, ref, M, N, K, column_major, strided, out_dtype):
    x = _rows(M, K, "bfloat16", strided, seed=N + 1)
    g = torch.Generator().manual_seed(K + 1)
    w = (torch.randn(N, K, generator=g) * 50).to(torch.float8_e4m3fn)
    ws = torch.rand(-(-N // 128), -(-K // 128), generator=g) * 1e-2 + 1e-3
    bias = torch.randn(N, generator=g).to(getattr(torch, out_dtype))
    q, s = ops.per_token_group_quant_fp8(x, 128, column_major_scales=column_major, backend="reference")
    if strided:  # codes as rows of a wider buffer
        wide = torch.zeros(M, K + 48, dtype=torch.float8_e4m3fn)
        wide[:, 16:16 + K] = q
        q = wide[:, 16:16 + K]
    dt = getattr(torch, out_dtype)
    out = ops.fp8_block_linear_quantized(q, s, w, ws, (128, 128), bias, out_dtype=dt, backend="triton")
    want = ref.fp8_block_gemm_ref(q, s, w, ws, (128, 128), torch.float32, bias)
    assert out.dtype == dt
    rel = ((out.float() - want).norm() / want.norm()).item()
    assert rel < 1e-2, f"rel err {rel}"


def _run_norm(ops, M, K, group, dtype, residual, column_major, strided):
    _check_norm(ops.rms_norm_quant_fp8, M, K, group, dtype, residual, column_major, strided)


def _check_norm(op, M, K, group, dtype, residual, column_major, strided):
    x = _rows(M, K, dtype, strided, seed=K)
    dt = getattr(torch, dtype)
    w = (torch.rand(K, generator=torch.Generator().manual_seed(1)) + 0.5).to(dt)
    res_t = (torch.randn(M, K, generator=torch.Generator().manual_seed(2))).to(dt) if residual else None
    res_r = res_t.clone() if residual else None
    q, s = op(x, w, 1e-6, group, residual=res_t, column_major_scales=column_major, backend="triton")
    qr, sr = op(x, w, 1e-6, group, residual=res_r, column_major_scales=column_major, backend="reference")
    if residual:
        assert torch.equal(res_t, res_r), "residual differs"
    assert s.stride() == sr.stride(), (s.stride(), sr.stride())
    _assert_codes_close(q, s, qr, sr)


def _assert_codes_close(q, s, qr, sr):
    # the fused norm's sum of squares may round its rstd an ulp apart: a code one step off here and there
    assert torch.allclose(s, sr, rtol=1e-5, atol=0), "scales differ"
    diff = (q.view(torch.uint8).int() - qr.view(torch.uint8).int()).abs()
    assert diff.max() <= 1 and (diff > 0).float().mean() < 0.01, f"codes differ: {int((diff > 0).sum())}"


def _run_norm_pdl(kern, ref):
    # pdl_trigger only adds PDL to the launch (off on the CPU, as on a GPU before sm_90): the same codes
    # against the reference, and a name launch_options does not know is refused
    x = _rows(5, 640, "bfloat16", True, seed=5)
    w = (torch.rand(640, generator=torch.Generator().manual_seed(3)) + 0.5).to(torch.bfloat16)
    q, s = kern.rms_norm_quant_fp8(x, w, 1e-6, 128, pdl_trigger="first", scale_eps=ref.FP8_SCALE_EPS)
    qr, sr = ref.rms_norm_quant_fp8_ref(x, w, 1e-6, 128)
    _assert_codes_close(q, s, qr, sr)
    try:
        kern.rms_norm_quant_fp8(x, w, pdl_trigger="soon")
    except ValueError as exc:
        assert "trigger" in str(exc), exc
    else:
        raise AssertionError("pdl_trigger='soon' was accepted")


def _worker() -> dict:
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(ROOT))
    from qlinear.kernels import fp8_triton as kern
    from qlinear.ops import fp8 as ops
    from qlinear.reference import fp8 as ref

    jobs = []
    jobs += [(i, lambda c=c: _run_quant(kern, ref, *c)) for i, c in zip(_ids("quant", QUANT_CASES), QUANT_CASES)]
    jobs += [(i, lambda c=c: _run_gemm(kern, ref, *c)) for i, c in zip(_ids("gemm", GEMM_CASES), GEMM_CASES)]
    jobs += [(i, lambda c=c: _run_fused(kern, ref, *c)) for i, c in zip(_ids("fused", FUSED_CASES), FUSED_CASES)]
    jobs += [(i, lambda c=c: _run_quant_rows(kern, ref, *c))
             for i, c in zip(_ids("quantrows", QUANT_ROW_CASES), QUANT_ROW_CASES)]
    jobs += [(i, lambda c=c: _run_linear(ops, ref, *c)) for i, c in zip(_ids("linear", LINEAR_CASES), LINEAR_CASES)]
    jobs += [(i, lambda c=c: _run_qlinear(ops, ref, *c)) for i, c in zip(_ids("qlinear", QLINEAR_CASES), QLINEAR_CASES)]
    jobs += [(i, lambda c=c: _run_norm(ops, *c)) for i, c in zip(_ids("norm", NORM_CASES), NORM_CASES)]
    jobs += [("normpdl", lambda: _run_norm_pdl(kern, ref))]
    report = {}
    for case_id, fn in jobs:
        try:
            fn()
            report[case_id] = None
        except Exception as exc:  # reported per case to the parent
            report[case_id] = f"{type(exc).__name__}: {exc}"
    return report


# ------------------------------------------------------------------------------------------
# pytest side
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def interpreter_report():
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, __file__, "--worker"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


ALL_IDS = (
    _ids("quant", QUANT_CASES)
    + _ids("gemm", GEMM_CASES)
    + _ids("fused", FUSED_CASES)
    + _ids("quantrows", QUANT_ROW_CASES)
    + _ids("linear", LINEAR_CASES)
    + _ids("qlinear", QLINEAR_CASES)
    + _ids("norm", NORM_CASES)
    + ["normpdl"]
)


@pytest.mark.parametrize("case_id", ALL_IDS)
def test_triton_interpreter(case_id, interpreter_report):
    assert case_id in interpreter_report, f"case {case_id} did not run"
    assert interpreter_report[case_id] is None, interpreter_report[case_id]


if __name__ == "__main__" and "--worker" in sys.argv:
    print(json.dumps(_worker()))
