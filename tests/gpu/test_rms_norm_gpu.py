"""GPU tests of RMSNorm (CUDA extension and Triton backends) against the fp32 reference.

The issue's grid: tokens x hidden x dtype x strided / contiguous x with / without residual x
backend, plus the DeepSeek slices, 3-D / 4-D views, misaligned pointers, NaN / inf, in place,
forced kernel configurations, custom-op checks, torch.compile and CUDA-graph capture. Strided
views live inside wider buffers whose other bytes are checked to be untouched.
"""

from __future__ import annotations

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from qlinear.ops.norm import fused_add_rms_norm, resolve_norm_backend, rms_norm
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

TOKENS = [7, 83, 4096]
HIDDEN = [8, 768, 769, 770, 771, 5120, 5124, 5125, 5126, 8192, 8199]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
STRIDED = [False, True]
RESIDUAL = [False, True]
BACKENDS = ["cuda", "triton"]
EPS = 1e-6
# one rounding of the result in the dtype (the kernels and the reference may round the same fp32
# value differently by one ulp after different summation orders / rsqrt approximations)
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (2e-5, 2e-5)}


def _close(actual, expected, dtype):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=atol, equal_nan=True)


def _gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


class Strided:
    """A [T, H] view at column `col` of a random [T, H + pad] buffer (or a contiguous tensor)."""

    def __init__(self, T, H, dtype, strided, seed, col=8, pad=72):
        width = H + pad if strided else H
        self.buf = (torch.randn(T, width, device="cuda", generator=_gen(seed)) * 2).to(dtype)
        self.col = col if strided else 0
        self.view = self.buf[:, self.col : self.col + H]
        self.before = self.buf.clone()
        if T > 1 and H > 1:
            assert self.view.is_contiguous() != strided

    def assert_outside_untouched(self):
        keep = torch.ones_like(self.buf, dtype=torch.bool)
        keep[:, self.col : self.col + self.view.shape[1]] = False
        assert torch.equal(self.buf[keep], self.before[keep]), "memory around the strided view was written"


def _weight(H, dtype, seed=1):
    return (1 + 0.5 * torch.randn(H, device="cuda", generator=_gen(seed))).to(dtype)


@pytest.fixture(scope="module", autouse=True)
def _cuda_ext_built():
    cuda_ext_ops()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("residual", RESIDUAL)
@pytest.mark.parametrize("strided", STRIDED)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", HIDDEN)
@pytest.mark.parametrize("T", TOKENS)
def test_grid(T, H, dtype, strided, residual, backend):
    x = Strided(T, H, dtype, strided, seed=T * 10007 + H)
    w = _weight(H, dtype)
    if residual:
        r = Strided(T, H, dtype, strided, seed=T + H, col=16, pad=40)
        out_ref, r_ref = fused_add_rms_norm_ref(x.view, r.view, w, EPS)
        fused_add_rms_norm(x.view, r.view, w, EPS, backend=backend)
        torch.testing.assert_close(r.view, r_ref, rtol=0, atol=0)  # one fp32 add, one rounding
        _close(x.view, out_ref, dtype)
        r.assert_outside_untouched()
    else:
        out = Strided(T, H, dtype, strided, seed=T + 2 * H, col=24, pad=48)
        expected = rms_norm_ref(x.view, w, EPS)
        y = rms_norm(x.view, w, EPS, out=out.view, backend=backend)
        assert y is out.view
        _close(out.view, expected, dtype)
        assert torch.equal(x.buf, x.before), "x was modified"
        out.assert_outside_untouched()
    x.assert_outside_untouched()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("T", [7, 4096])
def test_deepseek_slices(T, backend):
    dtype = torch.bfloat16
    buf = (torch.randn(T, 2112, device="cuda", generator=_gen(3)) * 3).to(dtype)
    before = buf.clone()
    w_q, w_kv = _weight(1536, dtype, 4), _weight(512, dtype, 5)
    q_c, kv_c = buf[:, :1536], buf[:, 1536:2048]
    q_ref, kv_ref = rms_norm_ref(q_c, w_q, EPS), rms_norm_ref(kv_c, w_kv, EPS)
    rms_norm(q_c, w_q, EPS, out=q_c, backend=backend)
    rms_norm(kv_c, w_kv, EPS, out=kv_c, backend=backend)
    _close(q_c, q_ref, dtype)
    _close(kv_c, kv_ref, dtype)
    assert torch.equal(buf[:, 2048:], before[:, 2048:])
    # fused add on a strided slice with a contiguous residual
    r = torch.randn(T, 1536, device="cuda", generator=_gen(6)).to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(q_c, r, w_q, EPS)
    fused_add_rms_norm(q_c, r, w_q, EPS, backend=backend)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(q_c, out_ref, dtype)
    _close(kv_c, kv_ref, dtype)  # untouched by the q_c op


VIEWS = {
    "3d_contiguous": lambda d: torch.randn(4, 9, 768, device="cuda").to(d),
    "3d_rows_strided": lambda d: torch.randn(4, 9, 800, device="cuda").to(d)[..., 16:784],
    "3d_non_collapsible": lambda d: torch.randn(4, 9, 800, device="cuda").to(d)[:, :7, 16:784],
    "3d_transposed": lambda d: torch.randn(9, 4, 768, device="cuda").to(d).transpose(0, 1),
    "4d_non_collapsible": lambda d: torch.randn(2, 5, 3, 800, device="cuda").to(d)[:, :4, :2, 8:776],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_views(view, dtype, backend):
    x = VIEWS[view](dtype)
    w = _weight(768, dtype)
    _close(rms_norm(x, w, EPS, backend=backend), rms_norm_ref(x, w, EPS), dtype)
    r = torch.randn(x.shape, device="cuda").to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    fused_add_rms_norm(x, r, w, EPS, backend=backend)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(x, out_ref, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", [768, 5120, 771])
def test_misaligned_pointers(H, dtype, backend):
    T = 33
    # storage offset of one element: no 16-byte alignment anywhere
    x = torch.randn(T * H + 1, device="cuda").to(dtype)[1:].view(T, H)
    out = torch.empty(T * H + 1, device="cuda", dtype=dtype)[1:].view(T, H)
    assert x.storage_offset() == 1 and out.storage_offset() == 1
    w = _weight(H, dtype)
    rms_norm(x, w, EPS, out=out, backend=backend)
    _close(out, rms_norm_ref(x, w, EPS), dtype)
    r_store = torch.randn(T * H + 3, device="cuda").to(dtype)
    r = r_store[3:].view(T, H)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    fused_add_rms_norm(x, r, w, EPS, backend=backend)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(x, out_ref, dtype)
    # misaligned weight
    w_odd = torch.empty(H + 1, device="cuda", dtype=dtype)[1:]
    w_odd.copy_(w)
    _close(rms_norm(x, w_odd, EPS, backend=backend), rms_norm_ref(x, w, EPS), dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", [768, 771])
def test_nan_inf_like_reference(H, dtype, backend):
    x = torch.randn(6, H, device="cuda").to(dtype)
    x[0, 3] = float("nan")
    x[1, 5] = float("inf")
    x[2, 0] = float("-inf")
    x[3] = 0  # eps keeps an all-zero row finite
    w = _weight(H, dtype)
    y = rms_norm(x, w, EPS, backend=backend)
    expected = rms_norm_ref(x, w, EPS)
    assert torch.equal(torch.isnan(y), torch.isnan(expected))
    _close(y, expected, dtype)
    r = torch.randn(6, H, device="cuda").to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    fused_add_rms_norm(x, r, w, EPS, backend=backend)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(torch.isnan(x), torch.isnan(out_ref))
    _close(x, out_ref, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("H", [70000, 65536 + 8])
def test_rows_longer_than_registers(H, backend):
    # beyond the register kernels (CUDA: generic two-pass kernel; Triton: chunked loop)
    dtype = torch.bfloat16
    x = Strided(3, H, dtype, True, seed=9)
    w = _weight(H, dtype)
    _close(rms_norm(x.view, w, EPS, backend=backend), rms_norm_ref(x.view, w, EPS), dtype)
    r = torch.randn(3, H, device="cuda").to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x.view, r, w, EPS)
    fused_add_rms_norm(x.view, r, w, EPS, backend=backend)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(x.view, out_ref, dtype)
    x.assert_outside_untouched()


# (vecs_per_thread, threads_per_row, rows_per_block); -1 = generic kernel. (8, 8, 1) asks for an
# 8-thread block, which the launcher widens to a full warp.
CONFIGS = [(1, 64, 1), (1, 64, 4), (2, 32, 8), (4, 16, 16), (4, 32, 2), (8, 8, 32), (8, 8, 1),
           (2, 128, 2), (4, 256, 1), (1, 512, 2), (1, 1024, 1), (-1, 32, 8), (-1, 256, 1), (-1, 1024, 1),
           (0, 8, 32), (0, 32, 8), (0, 64, 4), (0, 512, 1)]


@pytest.mark.parametrize("prefetch", [0, 1])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("H", [512, 1536])
def test_forced_cuda_configs(H, config, fused, prefetch):
    """Every kernel shape the plan might pick (sub-warp groups, several warps per row, several
    rows per block, the generic kernel, the weight loaded before / after the reduction), forced
    through the launcher's overrides. threads_per_row alone (vecs_per_thread 0) picks the
    smallest register budget that covers the row."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    nv, tpr, rpb = config
    dtype = torch.bfloat16
    T = 1000
    x = Strided(T, H, dtype, True, seed=H + tpr, col=8, pad=72)
    w = _weight(H, dtype)
    if fused:
        r = torch.randn(T, H, device="cuda").to(dtype)
        out_ref, r_ref = fused_add_rms_norm_ref(x.view, r, w, EPS)
        ops.fused_add_rms_norm(x.view[None], r[None], w, EPS, nv, tpr, rpb, prefetch)
        torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
        _close(x.view, out_ref, dtype)
    else:
        out = torch.empty(T, H, device="cuda", dtype=dtype)
        ops.rms_norm(out[None], x.view[None], w, EPS, nv, tpr, rpb, prefetch)
        _close(out, rms_norm_ref(x.view, w, EPS), dtype)
    x.assert_outside_untouched()


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_out_is_x(backend):
    x = Strided(100, 1536, torch.bfloat16, True, seed=11)
    w = _weight(1536, torch.bfloat16)
    expected = rms_norm_ref(x.view, w, EPS)
    assert rms_norm(x.view, w, EPS, out=x.view, backend=backend) is x.view
    _close(x.view, expected, torch.bfloat16)
    x.assert_outside_untouched()


def test_default_backend_is_cuda(monkeypatch):
    monkeypatch.delenv("QLINEAR_NORM_BACKEND", raising=False)
    x = torch.randn(2, 64, device="cuda")
    assert resolve_norm_backend(None, x) == "cuda"
    monkeypatch.setenv("QLINEAR_NORM_BACKEND", "triton")
    assert resolve_norm_backend(None, x) == "triton"
    assert resolve_norm_backend("reference", x) == "reference"


def test_errors_on_gpu():
    x = torch.randn(4, 64, device="cuda")
    with pytest.raises(ValueError, match="weight: expected device"):
        rms_norm(x, torch.ones(64), backend="cuda")
    with pytest.raises(ValueError, match="residual: expected device"):
        fused_add_rms_norm(x, torch.randn(4, 64), torch.ones(64, device="cuda"), backend="cuda")
    buf = torch.randn(4, 2112, device="cuda")
    with pytest.raises(ValueError, match="x and residual overlap"):
        fused_add_rms_norm(buf[:, :512], buf[:, 256:768], torch.ones(512, device="cuda"), backend="cuda")


@pytest.mark.parametrize("backend", BACKENDS)
def test_opcheck(backend):
    x = torch.randn(9, 2112, device="cuda", dtype=torch.bfloat16)[:, 1536:2048]
    w = _weight(512, torch.bfloat16)
    out = torch.empty(9, 512, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.qlinear.rms_norm.default, (out, x, w, EPS, backend))
    r = torch.randn(9, 512, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.qlinear.fused_add_rms_norm.default, (x, r, w, EPS, backend))


@pytest.mark.parametrize("backend", [*BACKENDS, None])
def test_torch_compile_and_cuda_graph(backend):
    dtype = torch.bfloat16
    w = _weight(1536, dtype)

    def step(buf, r):
        q = buf[:, :1536]
        fused_add_rms_norm(q, r, w, EPS, backend=backend)
        return rms_norm(buf[:, 1536:2048], w[:512], EPS, backend=backend)

    buf = torch.randn(64, 2112, device="cuda").to(dtype)
    r = torch.randn(64, 1536, device="cuda").to(dtype)
    buf_e, r_e = buf.clone(), r.clone()
    y_e = step(buf_e, r_e)

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True)
    buf_c, r_c = buf.clone(), r.clone()
    y_c = compiled(buf_c, r_c)
    torch.testing.assert_close(y_c, y_e, rtol=0, atol=0)
    torch.testing.assert_close(buf_c, buf_e, rtol=0, atol=0)
    torch.testing.assert_close(r_c, r_e, rtol=0, atol=0)

    # CUDA-graph capture of the eager ops, replayed on fresh inputs copied into the static ones
    buf_g, r_g = buf.clone(), r.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step(buf_g.clone(), r_g.clone())  # warm-up (compiles / loads outside the capture)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_g = step(buf_g, r_g)
    buf_g.copy_(buf)
    r_g.copy_(r)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y_g, y_e, rtol=0, atol=0)
    torch.testing.assert_close(buf_g, buf_e, rtol=0, atol=0)
    torch.testing.assert_close(r_g, r_e, rtol=0, atol=0)


# ----------------------------------------------------------------------------- launch knobs
# (vecs_per_thread, threads_per_row, rows_per_block, prefetch_weight, pdl, cluster, cache_hints):
# the CUDA launcher's NormConfig, forced through the binding (qlinear.ops.norm.CUDA_KNOB_RULES
# passes the same tuple). A knob the kernels cannot honour (misaligned rows, fp32 hints, a row too
# long for a cluster) must fall back to a correct plan.


def _run_knobs(T, H, dtype, fused, knobs, strided=True, seed=0):
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    x = Strided(T, H, dtype, strided, seed=seed + H, col=8, pad=72)
    w = _weight(H, dtype)
    if fused:
        r = Strided(T, H, dtype, strided, seed=seed + 7, col=16, pad=40)
        out_ref, r_ref = fused_add_rms_norm_ref(x.view, r.view, w, EPS)
        ops.fused_add_rms_norm(x.view[None], r.view[None], w, EPS, *knobs)
        torch.testing.assert_close(r.view, r_ref, rtol=0, atol=0)
        _close(x.view, out_ref, dtype)
        r.assert_outside_untouched()
    else:
        out = torch.empty(T, H, device="cuda", dtype=dtype)
        ops.rms_norm(out[None], x.view[None], w, EPS, *knobs)
        _close(out, rms_norm_ref(x.view, w, EPS), dtype)
        assert torch.equal(x.buf, x.before), "x was modified"
    x.assert_outside_untouched()


@pytest.mark.parametrize("pdl", [0, 1])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("cluster,nv,tpc", [(2, 0, 0), (4, 1, 0), (8, 1, 0), (8, 2, 0), (8, 0, 64), (4, 2, 32)],
                         ids=str)
@pytest.mark.parametrize("T,H", [(16, 7168), (1, 512), (133, 1536), (5, 5128), (3, 24), (2, 8199), (4, 70000)])
def test_cluster_knob(T, H, cluster, nv, tpc, fused, pdl):
    """Rows split over 2..8-CTA clusters (pieces of uneven length, CTAs with no vector, rows too
    long for the cluster kernel and odd H falling back), each with and without PDL."""
    _run_knobs(T, H, torch.bfloat16, fused, (nv, tpc, 1, 1, pdl, cluster, 0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("hints", [1, 3, 4, 5, 7])
@pytest.mark.parametrize("H,tpr", [(512, 16), (512, 32), (7168, 256), (7168, 512), (771, 0)])
def test_cache_hint_knob(H, tpr, hints, fused, dtype):
    """Cache-hinted loads / stores (fp16 / bf16 with 2 or 4 vectors per thread; other shapes and
    fp32 ignore the hint); in place and fused add read and write the same rows."""
    _run_knobs(300, H, dtype, fused, (0, tpr, 0, 0, 0, 0, hints))


def _check_pdl_chain(ops, w, x0, r0, knobs, dtype):
    """Four rounds of fused add -> norm -> norm, each kernel reading what the previous one wrote
    (and overwriting what it read), launched with ``knobs`` inside a CUDA graph, against the same
    chain launched eagerly with the automatic plan. A global access before griddepcontrol.wait
    would show up as a mismatch."""

    def chain(x, r, y, k):
        for _ in range(4):
            ops.fused_add_rms_norm(x[None], r[None], w, EPS, *k)  # r += x; x = norm(r)
            ops.rms_norm(y[None], x[None], w, EPS, *k)  # y = norm(x)
            ops.rms_norm(x[None], y[None], w, EPS, *k)  # x = norm(y)

    xe, re, ye = x0.clone(), r0.clone(), torch.empty_like(x0)
    chain(xe, re, ye, (0,) * 7)
    xg, rg, yg = x0.clone(), r0.clone(), torch.empty_like(x0)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain(xg.clone(), rg.clone(), yg.clone(), knobs)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain(xg, rg, yg, knobs)
    for _ in range(3):
        xg.copy_(x0)
        rg.copy_(r0)
        graph.replay()
        torch.cuda.synchronize()
        # the cluster kernels sum in another order: later steps may differ by an ulp
        _close(rg, re, dtype)
        _close(xg, xe, dtype)
        _close(yg, ye, dtype)


@pytest.mark.parametrize("knobs", [(0, 0, 0, 0, 1, 0, 0), (0, 0, 0, 1, 1, 0, 0), (-1, 0, 0, 0, 1, 0, 0),
                                   (0, 0, 0, 0, 1, 8, 0), (0, 0, 0, 0, 1, 0, 5), (0, 256, 1, 2, 1, 0, 0),
                                   (0, 1024, 1, 2, 1, 0, 0), (0, 0, -4, 0, 1, 0, 0), (0, 0, -2, 0, 1, 0, 4)],
                         ids=str)
def test_pdl_chain_in_cuda_graph(knobs):
    """Back-to-back dependent launches with programmatic dependent launch, captured in a CUDA
    graph: each kernel reads what the previous one wrote (and overwrites what it read), so a
    global access before griddepcontrol.wait would show up as a mismatch with the eager chain."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    dtype = torch.bfloat16
    for T, H in ((16, 7168), (4096, 512)):
        w = _weight(H, dtype)
        x0 = (torch.randn(T, H, device="cuda", generator=_gen(T)) * 2).to(dtype)
        r0 = torch.randn(T, H, device="cuda", generator=_gen(H)).to(dtype)

        _check_pdl_chain(ops, w, x0, r0, knobs, dtype)


def test_knob_rules_dispatch(monkeypatch):
    """qlinear.ops.norm.CUDA_KNOB_RULES reaches the launcher: a rule forcing clusters + PDL for
    few rows gives the reference's result through the public API (eager and in a CUDA graph)."""
    from qlinear.ops import norm as norm_ops

    monkeypatch.setattr(norm_ops, "CUDA_KNOB_RULES", ((132, 1 << 62, None, (0, 0, 0, 0, 1, 8, 0)),))
    assert norm_ops.cuda_knobs(16, 7168, 2, False) == (0, 0, 0, 0, 1, 8, 0)
    assert norm_ops.cuda_knobs(4096, 7168, 2, True) == norm_ops.CUDA_AUTO
    dtype = torch.bfloat16
    x = (torch.randn(16, 7168, device="cuda", generator=_gen(21)) * 2).to(dtype)
    r = torch.randn(16, 7168, device="cuda", generator=_gen(22)).to(dtype)
    w = _weight(7168, dtype)
    _close(rms_norm(x, w, EPS, backend="cuda"), rms_norm_ref(x, w, EPS), dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    fused_add_rms_norm(x, r, w, EPS, backend="cuda")
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(x, out_ref, dtype)


# ----------------------------------------------------------------------------- gaps2 knobs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(0, 256, 1, 2, 1, 0, 0), (0, 1024, 1, 2, 0, 0, 0), (0, 128, 1, 2, 1, 0, 0),
                                   (0, 0, -1, 0, 0, 0, 0), (0, 0, -4, 0, 0, 0, 0), (0, 0, -4, 0, 0, 0, 4),
                                   (0, 512, -2, 0, 1, 0, 0), (0, 32, -8, 0, 0, 0, 0), (0, 1024, -2, 0, 0, 0, 0)],
                         ids=str)
@pytest.mark.parametrize("T,H", [(16, 7168), (1000, 512), (333, 1536), (7, 769), (2000, 7168)])
def test_prefetch_before_wait_and_persistent(T, H, knobs, fused, dtype):
    """The weight loaded before the PDL wait (prefetch_weight 2; the fused add falls back to 1)
    and the persistent kernel (rows_per_block -k: several row groups per block with the next
    group's loads in flight, a partial last group, more blocks asked than rows; the fused add,
    odd H and 1024-thread rows fall back to the one-shot kernels)."""
    _run_knobs(T, H, dtype, fused, knobs)


def test_persistent_in_place():
    """In place through the persistent kernel: the prefetched rows of the next group are never
    rows this block has written."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    dtype = torch.bfloat16
    for T, H, k in ((5000, 512, -2), (3000, 7168, -4), (777, 1536, -1)):
        x = Strided(T, H, dtype, True, seed=T + H)
        w = _weight(H, dtype)
        expected = rms_norm_ref(x.view, w, EPS)
        ops.rms_norm(x.view[None], x.view[None], w, EPS, 0, 0, k, 0, 0, 0, 0)
        _close(x.view, expected, dtype)
        x.assert_outside_untouched()


@pytest.mark.parametrize("config", [(1, 8, 1), (8, 4, 1), (0, 0, -1)], ids=str)
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("T,H", [(300, 7168), (1000, 512)])
def test_triton_configs_with_eviction_hints(T, H, config, fused):
    """Triton (rows, num_warps, evict) configs with the eviction-hinted loads (few shapes: each
    config is a Triton compile)."""
    from qlinear.kernels import norm_triton

    dtype = torch.bfloat16
    x = Strided(T, H, dtype, True, seed=T * 3 + H)
    w = _weight(H, dtype)
    if fused:
        r = torch.randn(T, H, device="cuda", generator=_gen(5)).to(dtype)
        out_ref, r_ref = fused_add_rms_norm_ref(x.view, r, w, EPS)
        norm_triton.fused_add_rms_norm_triton(x.view[None], r[None], w, EPS, config)
        torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
        _close(x.view, out_ref, dtype)
    else:
        out = torch.empty(T, H, device="cuda", dtype=dtype)
        norm_triton.rms_norm_triton(out[None], x.view[None], w, EPS, config)
        _close(out, rms_norm_ref(x.view, w, EPS), dtype)
    x.assert_outside_untouched()


def test_auto_backend_rules(monkeypatch):
    """AUTO_BACKEND_RULES route automatically dispatched calls (and only those) to Triton; the
    result matches the reference either way."""
    from qlinear.ops import norm as norm_ops

    monkeypatch.delenv("QLINEAR_NORM_BACKEND", raising=False)
    monkeypatch.setattr(norm_ops, "AUTO_BACKEND_RULES", ((100, 0, 1024, False, False, "triton"),))
    assert norm_ops.auto_backend(4096, 512, 2, False, False) == "triton"
    assert norm_ops.auto_backend(4096, 512, 2, False, True) == "cuda"
    assert norm_ops.auto_backend(50, 512, 2, False, False) == "cuda"
    assert norm_ops.auto_backend(4096, 1536, 2, False, False) == "cuda"
    calls = []
    from qlinear.kernels import norm_triton

    real = norm_triton.rms_norm_triton
    monkeypatch.setattr(norm_triton, "rms_norm_triton", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    dtype = torch.bfloat16
    buf = (torch.randn(4096, 2112, device="cuda", generator=_gen(31)) * 2).to(dtype)
    kv = buf[:, 1536:2048]
    w = _weight(512, dtype)
    _close(rms_norm(kv, w, EPS), rms_norm_ref(kv, w, EPS), dtype)
    assert calls, "the rule did not send the call to Triton"
    calls.clear()
    _close(rms_norm(kv, w, EPS, backend="cuda"), rms_norm_ref(kv, w, EPS), dtype)
    assert not calls, "an explicit backend must not be overridden"


# ----------------------------------------------------------------------------- gaps3 variants


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(0, 448, 1, 0, 1, 0, 0), (0, 896, 1, 2, 1, 0, 0), (0, 448, 1, 1, 0, 0, 0),
                                   (0, 448, 1, 0, 1, 0, 16), (0, 896, 1, 0, 0, 0, 16), (0, 96, 1, 2, 1, 0, 0),
                                   (0, 0, 0, 0, 0, 0, 8), (0, 0, 0, 1, 1, 0, 8), (0, 256, 1, 1, 1, 0, 8),
                                   (0, 32, 8, 0, 0, 0, 8)],
                         ids=str)
@pytest.mark.parametrize("T,H", [(16, 7168), (300, 7168), (133, 5120), (7, 512), (5, 769), (2, 8192)])
def test_row_kernel_and_shuffle_reduction(T, H, knobs, fused, dtype):
    """The one-row-per-block kernel (threads per row a non-power-of-two multiple of 32: every
    thread 1 or 2 vectors, threads without a vector for short rows, odd warp counts; fp32, odd H
    and rows needing more than 2 vectors per thread fall back) and the pre-round-2 shuffle
    reduction (hints bit 8; applies to 4 vectors per thread, elsewhere ignored)."""
    _run_knobs(T, H, dtype, fused, knobs)


def test_row_kernel_in_place_and_pdl_graph():
    """In place through the row kernel, and a PDL chain of row-kernel launches in a CUDA graph."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    dtype = torch.bfloat16
    x = Strided(1000, 7168, dtype, True, seed=41)
    w = _weight(7168, dtype)
    expected = rms_norm_ref(x.view, w, EPS)
    ops.rms_norm(x.view[None], x.view[None], w, EPS, 0, 448, 1, 0, 1, 0, 0)
    _close(x.view, expected, dtype)
    x.assert_outside_untouched()
    a0 = (torch.randn(16, 7168, device="cuda", generator=_gen(42)) * 2).to(dtype)
    a, b = a0.clone(), torch.empty_like(a0)
    ae, be = a0.clone(), torch.empty_like(a0)
    for _ in range(3):  # eager chain, automatic plan
        ops.rms_norm(be[None], ae[None], w, EPS)
        ops.rms_norm(ae[None], be[None], w, EPS)
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ops.rms_norm(b[None], a[None], w, EPS, 0, 448, 1, 2, 1, 0, 0)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(graph):
        for _ in range(3):
            ops.rms_norm(b[None], a[None], w, EPS, 0, 448, 1, 2, 1, 0, 0)
            ops.rms_norm(a[None], b[None], w, EPS, 0, 896, 1, 2, 1, 0, 0)
    a.copy_(a0)
    graph.replay()
    torch.cuda.synchronize()
    _close(a, ae, dtype)
    _close(b, be, dtype)


def _check_triton_strided(T, H, config, fused, seed_x, seed_r):
    """A Triton rows config on strided bf16 [T, H] rows vs the fp32 reference: plain out of place,
    or fused in place (the residual exact); nothing outside the views is written."""
    from qlinear.kernels import norm_triton

    dtype = torch.bfloat16
    x = Strided(T, H, dtype, True, seed=seed_x)
    w = _weight(H, dtype)
    if fused:
        r = Strided(T, H, dtype, True, seed=seed_r, col=16, pad=40)
        out_ref, r_ref = fused_add_rms_norm_ref(x.view, r.view, w, EPS)
        norm_triton.fused_add_rms_norm_triton(x.view[None], r.view[None], w, EPS, config)
        torch.testing.assert_close(r.view, r_ref, rtol=0, atol=0)
        _close(x.view, out_ref, dtype)
        r.assert_outside_untouched()
    else:
        out = torch.empty(T, H, device="cuda", dtype=dtype)
        norm_triton.rms_norm_triton(out[None], x.view[None], w, EPS, config)
        _close(out, rms_norm_ref(x.view, w, EPS), dtype)
    x.assert_outside_untouched()


# few shapes x configs: every combination is a Triton compile (H is a compile-time constant)
@pytest.mark.parametrize("config", [(1, 8, 0, 1), (2, 1, 0, 1), (4, 2, 1, 1)], ids=str)
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("T,H", [(300, 7168), (1000, 512), (7, 769)])
def test_triton_static_rows_kernel(T, H, config, fused):
    """The constant-H Triton rows kernel (static = 1): unmasked when H is a power of two and the
    rows divide evenly, masked otherwise; strided rows; 1-warp configs (inductor's for 512)."""
    _check_triton_strided(T, H, config, fused, seed_x=T * 5 + H, seed_r=T + 9)


# ----------------------------------------------------------------------------- two-pass loop kernels


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(2, 256, 1, 0, 1, 0, 32), (4, 128, 1, 0, 0, 0, 32), (0, 448, 0, 0, 1, 0, 32),
                                   (2, 32, 1, 0, 0, 0, 32), (0, 0, 0, 0, 0, 0, 32), (-1, 256, 0, 0, 0, 0, 32)],
                         ids=str)
@pytest.mark.parametrize("T,H", [(300, 7168), (16, 7168), (7, 512), (5, 769), (3, 1536), (2, 70000)])
def test_cuda_loop_kernel(T, H, knobs, fused, dtype):
    """The CUDA two-pass loop kernel (hints bit 32): rows longer and shorter than one step of the
    block, threads without a vector, 448-thread blocks, 4 vectors per step; odd H / vecs -1 fall
    back to the generic kernel."""
    _run_knobs(T, H, dtype, fused, knobs)


def test_cuda_loop_kernel_in_place_and_3d():
    """The loop kernel in place (pass 2 overwrites what pass 1 read) and on a non-collapsible 3-D view."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    dtype = torch.bfloat16
    for knobs in ((2, 256, 1, 0, 1, 0, 32), (4, 512, 1, 0, 0, 0, 32)):
        x = Strided(64, 7168, dtype, True, seed=5)
        w = _weight(7168, dtype)
        expected = rms_norm_ref(x.view, w, EPS)
        ops.rms_norm(x.view[None], x.view[None], w, EPS, *knobs)
        _close(x.view, expected, dtype)
        x.assert_outside_untouched()
        buf = (torch.randn(3, 5, 1100, device="cuda", generator=_gen(8)) * 2).to(dtype)
        v = buf[:, :4, 16:16 + 1024]
        out = torch.empty(3, 4, 1024, device="cuda", dtype=dtype)
        w = _weight(1024, dtype)
        ops.rms_norm(out, v, w, EPS, *knobs)
        _close(out, rms_norm_ref(v, w, EPS), dtype)


# few shapes x configs: each (H, R, warps) is a Triton compile
@pytest.mark.parametrize("config", [(1, 8, 0, 0, 1024), (1, 4, 0, 0, 2048), (1, 16, 0, 0, 4096),
                                    (1, 16, 0, 0, 4096, 1, 1), (2, 16, 0, 0, 4096, 1, 1), (1, 8, 0, 0, 2048, 3, 0)],
                         ids=str)
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("T,H", [(300, 7168), (7, 769)])
def test_triton_loop_kernel(T, H, config, fused):
    """The Triton two-pass loop kernel (5th config field R; 6th num_stages, 7th flat, 1st rows per
    program on the flat path): R dividing H or not, R > H, strided rows, plain and fused (the
    residual is exact)."""
    _check_triton_strided(T, H, config, fused, seed_x=T * 3 + H, seed_r=T + 11)


def test_committed_rules_reach_the_reference():
    """The committed AUTO_BACKEND_RULES / CUDA_KNOB_RULES / Triton rules on the benchmarked shapes
    (scaled down in rows where the rule allows) give the reference's result."""
    dtype = torch.bfloat16
    for T, H, col in ((16, 7168, None), (20000, 7168, None), (16384, 512, 1536), (4096, 512, 1536),
                      (16384, 1536, 0), (100, 5120, None), (4096, 7168, None), (16384, 7168, None)):
        if col is None:
            x = (torch.randn(T, H, device="cuda", generator=_gen(T + H)) * 2).to(dtype)
        else:
            buf = (torch.randn(T, 2112, device="cuda", generator=_gen(T + H)) * 2).to(dtype)
            x = buf[:, col:col + H]
        w = _weight(H, dtype)
        _close(rms_norm(x, w, EPS), rms_norm_ref(x, w, EPS), dtype)
        r = torch.randn(T, H, device="cuda", generator=_gen(3)).to(dtype)
        xf = x.clone()
        out_ref, r_ref = fused_add_rms_norm_ref(xf, r, w, EPS)
        fused_add_rms_norm(xf, r, w, EPS)
        torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
        _close(xf, out_ref, dtype)


# ----------------------------------------------------------------------------- round 5 variants


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(0, 0, 1, 2, 1, 8, 64), (0, 0, 1, 2, 1, 8, 192), (1, 128, 1, 1, 1, 8, 64),
                                   (2, 64, 1, 2, 0, 8, 192), (0, 0, 1, 2, 1, 4, 64), (2, 128, 1, 2, 1, 4, 192),
                                   (0, 0, 1, 2, 1, 2, 192), (0, 0, 1, 0, 1, 16, 64), (0, 0, 1, 2, 1, 16, 192),
                                   (1, 32, 1, 2, 1, 16, 64), (2, 1024, 1, 2, 1, 2, 192)], ids=str)
@pytest.mark.parametrize("T,H", [(16, 7168), (1, 512), (133, 1536), (5, 5128), (3, 24), (2, 8199), (4, 70000),
                                 (7, 64)])
def test_cluster_mbar_kernel(T, H, knobs, fused):
    """The mbarrier cluster kernel (hints bit 64 with a cluster): 2..16 CTAs per row, block and warp
    pushes, weight before / after the PDL wait, pieces of uneven length and CTAs with no vector
    (H = 64 over 16 CTAs), thread counts too small for the row (fall back), odd H, rows too long."""
    _run_knobs(T, H, torch.bfloat16, fused, knobs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_cluster_mbar_kernel_dtypes(dtype):
    """fp16 takes the mbarrier cluster kernel, fp32 falls back to the older cluster kernel."""
    for fused in (False, True):
        _run_knobs(16, 7168, dtype, fused, (0, 0, 1, 2, 1, 8, 192))
        _run_knobs(9, 1024, dtype, fused, (0, 0, 1, 0, 1, 4, 64))


def test_cluster_mbar_in_place_3d_and_pdl_graph():
    """In place (each CTA overwrites the piece it read), a non-collapsible 3-D view, and a CUDA graph
    of dependent PDL launches where every kernel reads what the previous one wrote."""
    from qlinear.kernels import cuda_ext

    ops = cuda_ext.load()
    dtype = torch.bfloat16
    for knobs in ((0, 0, 1, 2, 1, 8, 192), (0, 0, 1, 2, 1, 16, 64), (0, 0, 1, 2, 1, 2, 64)):
        x = Strided(16, 7168, dtype, True, seed=11)
        w = _weight(7168, dtype)
        expected = rms_norm_ref(x.view, w, EPS)
        ops.rms_norm(x.view[None], x.view[None], w, EPS, *knobs)
        _close(x.view, expected, dtype)
        x.assert_outside_untouched()
        buf = (torch.randn(3, 5, 1100, device="cuda", generator=_gen(9)) * 2).to(dtype)
        v = buf[:, :4, 16:16 + 1024]
        out = torch.empty(3, 4, 1024, device="cuda", dtype=dtype)
        w1 = _weight(1024, dtype)
        ops.rms_norm(out, v, w1, EPS, *knobs)
        _close(out, rms_norm_ref(v, w1, EPS), dtype)

        x0 = (torch.randn(16, 7168, device="cuda", generator=_gen(21)) * 2).to(dtype)
        r0 = torch.randn(16, 7168, device="cuda", generator=_gen(22)).to(dtype)

        _check_pdl_chain(ops, w, x0, r0, knobs, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(2, 256, 1, 0, 1, 0, 96), (2, 256, 1, 0, 1, 0, 160), (4, 128, 1, 0, 0, 0, 224),
                                   (0, 448, 0, 0, 1, 0, 224), (2, 32, 1, 0, 0, 0, 96)], ids=str)
@pytest.mark.parametrize("T,H", [(300, 7168), (7, 512), (5, 769), (2, 70000)])
def test_cuda_loop_kernel_variants(T, H, knobs, fused, dtype):
    """The loop kernel's store / load variants (hints 32 + 64 plain stores, + 128 L1-allocating
    loads; fp32 ignores them); odd H falls back to the generic kernel."""
    _run_knobs(T, H, dtype, fused, knobs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("knobs", [(0, 448, 1, 0, 1, 0, 4), (0, 448, 1, 0, 1, 0, 5), (0, 448, 1, 0, 1, 0, 20),
                                   (0, 448, 1, 0, 1, 0, 21), (0, 896, 1, 0, 1, 0, 20), (0, 896, 1, 0, 0, 0, 5),
                                   (0, 448, 1, 2, 1, 0, 5)], ids=str)
@pytest.mark.parametrize("T,H", [(300, 7168), (133, 5120), (3, 768)])
def test_row_kernel_cache_hints(T, H, knobs, fused, dtype):
    """The one-row-per-block kernel with st.cs (4) / ld.cs + st.cs (5) at both launch bounds; a
    weight before the PDL wait keeps the unhinted kernel."""
    _run_knobs(T, H, dtype, fused, knobs)
