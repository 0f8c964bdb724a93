"""GPU tests of rms_norm_slices(..., quant_fp8=...) (issue 7: the FP8 MLA tail in one launch):
the one-launch CUDA kernel (csrc/norm_slices_quant.cuh) against rms_norm_quant_fp8's CUDA kernels
bit for bit (same sum order), against the fp32 reference within the norm-quant tolerance (the
reference's sum order can move rstd by an ulp: at most one e4m3 step on <= 1e-3 of the codes),
the plain slice against rms_norm; strided MLA rows (stride 2112), fp16 / bf16, scale layouts,
the per-slice fallback (large M, fp32, odd widths), columns outside the slices untouched, and
CUDA-graph capture. Fresh random data (never zeros)."""

from __future__ import annotations

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from qlinear._utils import FP8_E4M3
from qlinear.ops import norm as norm_ops
from qlinear.ops import rms_norm, rms_norm_quant_fp8, rms_norm_slices

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

EPS = 1e-6
MLA = (0, 1536, 2048)


@pytest.fixture(scope="module", autouse=True)
def _ext():
    return cuda_ext_ops()


def _data(M, dtype, seed, width=2112, bounds=MLA):
    g = torch.Generator(device="cuda").manual_seed(seed * 1009 + M)
    x = (torch.randn(M, width, device="cuda", generator=g) * 2).to(dtype)
    ws = [(1 + 0.3 * torch.randn(b - a, device="cuda", generator=g)).to(dtype) for a, b in zip(bounds, bounds[1:])]
    return x, ws


def _same(q, s, qr, sr, what):
    assert q.dtype == FP8_E4M3 and q.shape == qr.shape
    assert torch.equal(q.view(torch.uint8), qr.view(torch.uint8)), f"{what}: codes differ"
    assert s.stride() == sr.stride() and torch.equal(s, sr), f"{what}: scales differ"


def _close_to_ref(q, s, qr, sr, what):
    assert torch.allclose(s, sr, rtol=1e-5, atol=0), f"{what}: scales differ"
    d = (q.view(torch.uint8).int() - qr.view(torch.uint8).int()).abs()
    assert d.max().item() <= 1, f"{what}: a code differs by {d.max().item()} steps"
    assert int((d > 0).sum()) <= max(1, 1e-3 * d.numel()), f"{what}: {int((d > 0).sum())} codes differ"


def _plain_close(y, yr, dtype, what):
    # one rounding step of the output dtype (the plain kernels' sum orders differ)
    tol = 1e-2 if dtype == torch.bfloat16 else 1.5e-3
    torch.testing.assert_close(y.float(), yr.float(), rtol=tol, atol=tol, msg=what)


def _ran_one_launch(monkeypatch, ext):
    """Counts calls of the one-launch op that launched (returned True)."""
    calls = []
    real = ext.rms_norm_slices_quant

    class Spy:
        def __getattr__(self, name):
            return getattr(ext, name)

        def rms_norm_slices_quant(self, *a):
            r = real(*a)
            calls.append(r)
            return r

    from qlinear.kernels import cuda_ext

    monkeypatch.setattr(cuda_ext, "load", lambda *a, **k: Spy())
    return calls


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M", [1, 2, 7, 16, 129, 4096])
@pytest.mark.parametrize("column_major", [False, True])
def test_mla_bit_exact(M, dtype, column_major, _ext, monkeypatch):
    x, (w_q, w_kv) = _data(M, dtype, seed=1 + column_major)
    before = x.clone()
    calls = _ran_one_launch(monkeypatch, _ext)
    (q, s), kv = rms_norm_slices(x, MLA, (w_q, w_kv), EPS, quant_fp8=(True, False), column_major_scales=column_major)
    torch.cuda.synchronize()
    if M < norm_ops.SLICES_QUANT_ONE_LAUNCH_MAX_ROWS:
        assert calls == [True], f"M={M}: the one-launch kernel did not run ({calls})"
    monkeypatch.undo()
    assert x.stride(0) == 2112 and torch.equal(x, before)
    qc, sc = rms_norm_quant_fp8(x[:, :1536], w_q, EPS, 128, column_major_scales=column_major, backend="cuda")
    _same(q, s, qc, sc, f"M={M} {dtype} vs rms_norm_quant_fp8 cuda")
    qr, sr = rms_norm_quant_fp8(x[:, :1536], w_q, EPS, 128, column_major_scales=column_major, backend="reference")
    _close_to_ref(q, s, qr, sr, f"M={M} {dtype} vs reference")
    kv_cuda = rms_norm(x[:, 1536:2048], w_kv, EPS, backend="cuda")
    _plain_close(kv, kv_cuda, dtype, f"M={M} kv vs rms_norm")
    assert (kv != kv_cuda).float().mean().item() <= 0.01, "kv: more than 1% of elements differ from rms_norm"
    _plain_close(kv, rms_norm(x[:, 1536:2048], w_kv, EPS, backend="reference"), dtype, "kv vs reference")


@pytest.mark.parametrize("M", [1, 16, 4096])
def test_one_launch_forced_at_large_m(M, _ext):
    """The raw one-launch op at sizes the public op may route to two launches: same bits."""
    x, (w_q, w_kv) = _data(M, torch.bfloat16, seed=5)
    q = torch.empty(M, 1536, dtype=FP8_E4M3, device="cuda")
    s = torch.empty(M, 12, device="cuda")
    kv = torch.empty(M, 512, dtype=torch.bfloat16, device="cuda")
    for warps in (0, 2, 8):
        for pdl in (0, 1):
            q.fill_(0), s.fill_(0), kv.fill_(0)
            assert _ext.rms_norm_slices_quant([q, kv], [s, None], x, list(MLA), [w_q, w_kv], EPS, 1e-10, 128, warps, pdl)
            qc, sc = rms_norm_quant_fp8(x[:, :1536], w_q, EPS, 128, backend="cuda")
            _same(q, s, qc, sc, f"M={M} warps={warps} pdl={pdl}")
            _plain_close(kv, rms_norm(x[:, 1536:2048], w_kv, EPS, backend="cuda"), torch.bfloat16, "kv")


@pytest.mark.parametrize("case", ["three_slices", "quant_last", "inplace_plain", "odd_width_fallback", "fp32_fallback"])
def test_other_layouts(case):
    dtype = torch.float32 if case == "fp32_fallback" else torch.bfloat16
    bounds = {"three_slices": (0, 512, 1024, 2048), "quant_last": (64, 576, 1088),
              "odd_width_fallback": (0, 1500, 2048)}.get(case, MLA)
    flags = {"three_slices": (True, False, True), "quant_last": (False, True)}.get(case, (True, False))
    x, ws = _data(33, dtype, seed=7, bounds=bounds)
    before = x.clone()
    res = rms_norm_slices(x, bounds, ws, EPS, inplace=case == "inplace_plain", quant_fp8=flags)
    torch.cuda.synchronize()
    for i, f in enumerate(flags):
        xs = before[:, bounds[i]:bounds[i + 1]]
        if f:
            q, s = res[i]
            qc, sc = rms_norm_quant_fp8(xs, ws[i], EPS, 128, backend="cuda")
            _same(q, s, qc, sc, f"{case} slice {i}")
        else:
            _plain_close(res[i], rms_norm(xs, ws[i], EPS, backend="reference"), dtype, f"{case} slice {i}")
            if case == "inplace_plain":
                assert res[i].data_ptr() == x[:, bounds[i]:].data_ptr()
    keep = torch.ones(x.shape[1], dtype=torch.bool, device="cuda")
    for i in range(len(flags)):
        if case == "inplace_plain" and not flags[i]:
            keep[bounds[i]:bounds[i + 1]] = False
    assert torch.equal(x[:, keep], before[:, keep]), "columns outside the written slices changed"


def test_cuda_graph_capture():
    M = 16
    x, (w_q, w_kv) = _data(M, torch.bfloat16, seed=9)
    out = {}

    def step():
        out["r"] = rms_norm_slices(x, MLA, (w_q, w_kv), EPS, quant_fp8=(True, False))

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    x.copy_(_data(M, torch.bfloat16, seed=10)[0])
    graph.replay()
    torch.cuda.synchronize()
    (q, sc), kv = out["r"]
    qc, scc = rms_norm_quant_fp8(x[:, :1536], w_q, EPS, 128, backend="cuda")
    _same(q, sc, qc, scc, "graph replay")
    _plain_close(kv, rms_norm(x[:, 1536:2048], w_kv, EPS, backend="cuda"), torch.bfloat16, "graph kv")
