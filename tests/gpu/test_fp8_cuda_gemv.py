"""The one-launch FP8 block-scaled decode kernel (backend "cuda", csrc/fp8_gemv.cuh) on a GPU.

Against ``qlinear.reference.fp8.fp8_block_linear_ref`` (the same per-token-group quantization, then
an fp32 GEMM of the dequantized operands) on fresh random data: M in {1, 2, 3, 4, 7, 8, 9, 15, 16}
x the DeepSeek shapes and a ragged N x bf16 / fp16, strided x rows, bias; every compiled (R, PF)
pair with one and several K splits, in-kernel and pre-quantized x (Q = 1: bit-identical to the
in-kernel path at the same config); CUDA-graph replays (the split-K arrival counters must be reset);
split-K launches on two streams at once (one workspace per stream); the fallbacks to "triton" and
the errors of the raw op (each case in a subprocess, so a crash names the case); auto dispatch
through FP8_CUDA_MAX_M.
"""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from _cuda_ext import cuda_ext_ops
from _fp8_gpu_data import check as _check
from _fp8_gpu_data import weight as _weight
from qlinear.ops import fp8 as ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DEV = "cuda"
MS = (1, 2, 3, 4, 7, 8, 9, 15, 16)
SHAPES = [(2112, 7168), (24576, 1536), (7168, 16384), (1536, 7168), (576, 7168), (200, 1024)]
# S * 10000 + R * 1000 + PF * 100 + W (csrc/fp8_gemv_launch.h)
CODES = [11104, 11016, 41108, 12104, 32004, 22108, 14008, 34004, 81002, 11101, 11208, 11312, 21204, 31204]
# pre-quantized x (Q = 1); R = 4 is not compiled for it
PREQ_CODES = [1011104, 1011016, 1041108, 1011116, 1011216, 1011312, 1021104, 1021204, 1031204]
# x ahead (X = 1: each warp loads its next block's x before multiplying this one; R = 1, PF 1 or 2)
XA_CODES = [10011116, 10011114, 10011212, 10021108, 11011114, 11011116, 11011212, 11041108]


_ext = cuda_ext_ops


def _x(m, k, dtype, seed, row_pad=0):
    gen = torch.Generator(device=DEV).manual_seed(1000 + seed)
    x = torch.randn(m, k + row_pad, device=DEV, generator=gen) * 3
    x[:, :k:37] *= 50  # uneven group maxima
    return x.to(dtype)[:, :k]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_shapes_auto_config(shape, dtype):
    _ext()
    n, k = shape
    w, wsi = _weight(n, k)
    for m in MS:
        x = _x(m, k, dtype, m, row_pad=64 if m % 2 else 0)  # odd M: strided rows
        b = torch.randn(n, device=DEV).to(dtype) if m % 3 == 0 else None
        y = ops.fp8_block_gemv_cuda(x, w, wsi, b)
        assert y is not None, f"kernel did not take M={m} {n}x{k}"
        _check(y, x, w, wsi, b, f"M={m} {n}x{k} {dtype}")
        # the public op with backend="cuda" is the same launch
        y2 = ops.fp8_block_linear(x, w, wsi, bias=b, backend="cuda")
        assert torch.equal(y, y2)


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("m", [1, 5, 8, 12, 16])
def test_configs(code, m):
    _ext()
    for n, k in [(1536, 7168), (200, 1024)]:
        w, wsi = _weight(n, k)
        x = _x(m, k, torch.bfloat16, m + code)
        b = torch.randn(n, device=DEV).to(torch.bfloat16)
        y = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code)
        if y is None:  # a config over the warp cap of this M bucket is refused, not mislaunched
            pytest.skip(f"config {code} unsupported at M={m}")
        _check(y, x, w, wsi, b, f"M={m} {n}x{k} config={code}")


@pytest.mark.parametrize("code", PREQ_CODES)
@pytest.mark.parametrize("m", [1, 5, 8, 12, 16])
def test_preq_configs(code, m):
    _ext()
    for n, k in [(1536, 7168), (200, 1024)]:
        w, wsi = _weight(n, k)
        for dtype in (torch.bfloat16, torch.float16):
            x = _x(m, k, dtype, m + code, row_pad=64 if m % 2 else 0)
            b = torch.randn(n, device=DEV).to(dtype) if m % 2 else None
            y = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code)
            if y is None:
                pytest.skip(f"config {code} unsupported at M={m}")
            _check(y, x, w, wsi, b, f"M={m} {n}x{k} {dtype} config={code}")
            # same tiles, warps and splits as the in-kernel quantization: the same codes and scales
            # go through the same fp32 sums
            y0 = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code % 1000000)
            if y0 is not None:
                assert torch.equal(y, y0), f"pre-quantized differs from in-kernel (M={m} {n}x{k} {code})"


@pytest.mark.parametrize("code", XA_CODES)
@pytest.mark.parametrize("m", [1, 5, 8, 9, 16])
def test_x_ahead_configs(code, m):
    """X = 1 moves only when x is loaded: against the reference, and bit for bit against the same
    code without X (same blocks per warp, same sums); an X code with R > 1 or PF = 0 is refused."""
    C = _ext()
    for n, k in [(2112, 7168), (200, 1024)]:
        w, wsi = _weight(n, k)
        for dtype in (torch.bfloat16, torch.float16):
            x = _x(m, k, dtype, m + code % 991, row_pad=64 if m % 2 else 0)
            b = torch.randn(n, device=DEV).to(dtype) if m % 2 else None
            y = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code)
            what = f"M={m} {n}x{k} {dtype} config={code}"
            if y is None:  # over the register cap of two token tiles (16-bit x: W <= 12): refused
                assert m > 8 and code // 1000000 == 10 and code % 100 > 12, what
                continue
            _check(y, x, w, wsi, b, what)
            y0 = ops.fp8_block_gemv_cuda(x, w, wsi, b, config=code - 10000000)
            assert y0 is not None and torch.equal(y, y0), f"x ahead differs from {code - 10000000} ({what})"
    w, wsi = _weight(2112, 7168)
    x = _x(m, 7168, torch.bfloat16, 5)
    ws = ops._cuda_workspace(x.device)
    for bad in (10012108, 10011008, 20011116, 110011116):  # R = 2, PF = 0, X = 2, a digit above X (code 5)
        assert C.fp8_block_gemv_supported(x, w, wsi, ws, bad) == 5, bad


@pytest.mark.parametrize("eager_cuda", [True, False])
@pytest.mark.parametrize("m", [9, 16])
def test_quantizer_trigger_same_result(monkeypatch, m, eager_cuda):
    """The quantizer's PDL trigger (FP8_CUDA_CONFIG's third field) moves only its launch_dependents:
    first, early and late give the same bits, and the table's 2112x7168 entry matches the reference; on the
    CUDA quantizer these eager calls take (FP8_EAGER_QUANT_CUDA) and on the Triton one."""
    _ext()
    monkeypatch.setattr(ops, "FP8_EAGER_QUANT_CUDA", eager_cuda)
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    x = _x(m, k, torch.bfloat16, 77 + m)
    ys = {t: ops.fp8_block_gemv_cuda(x, w, wsi, None, config=1011114, quant_pdl=t) for t in ("first", "early", "late")}
    assert ys["late"] is not None and torch.equal(ys["early"], ys["late"]) and torch.equal(ys["first"], ys["late"])
    y = ops.fp8_block_gemv_cuda(x, w, wsi, None)
    assert y is not None
    _check(y, x, w, wsi, None, f"M={m} table entry")


@pytest.mark.parametrize("code", [11011114, 1011104, 11041108, 101042304, 11116])
def test_carveout_same_result(code):
    """A launch's shared-memory carveout (pdl.cuh) moves only where the driver splits L1 and shared memory: the
    register kernels (in-kernel and pre-quantized x, split K) and the TMA ring give the same bits at 0, 10 and 100 %
    as without one, against the reference too; a carveout outside -1 .. 100 is refused, naming it."""
    C = _ext()
    n, k = (7168, 16384) if code >= 100000000 else (2112, 7168)
    w, wsi = _weight(n, k)
    ws = ops._cuda_workspace(torch.device(DEV))
    preq = code // ops._CUDA_PREQ % 10 == 1
    for m in (3, 16):
        x = _x(m, k, torch.bfloat16, 300 + m)
        q, s = ops.per_token_group_quant_fp8(x, 128)
        if preq and C.fp8_block_gemv_supported(q, w, wsi, ws, code, s) != 0:
            pytest.skip(f"config {code} unsupported here (sm_90 only for the TMA ring)")

        def launch(cv):
            if preq:
                return C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.bfloat16, code, True, cv)
            return C.fp8_block_gemv(x, w, wsi, None, ws, code, True, 1e-10, cv)

        y0 = launch(-1)
        _check(y0, x, w, wsi, None, f"M={m} config={code}")
        for cv in (0, 10, 100):
            assert torch.equal(launch(cv), y0), (code, m, cv)
    for bad in (101, -2):
        with pytest.raises(RuntimeError, match="carveout"):
            launch(bad)


def _pair_from_graph(x, w, wsi):
    """The 11011114 decode pair (quantizer trigger first) captured into a CUDA graph after an eager warm-up on the
    capture's side stream, replayed once: its output."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11011114, quant_pdl="first")  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11011114, quant_pdl="first")
    g.replay()
    torch.cuda.synchronize()
    return y


def test_pair_carveout(monkeypatch):
    """The decode pair on the CUDA quantizer gives both launches FP8_PAIR_CARVEOUT: the same bits as without
    one (-1) and as the Triton quantizer's pair, eagerly and replayed from a CUDA graph."""
    _ext()
    n, k, m = 2112, 7168, 16
    w, wsi = _weight(n, k)
    x = _x(m, k, torch.bfloat16, 91)
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
    ys = {}
    for cv in (-1, 10, 0):
        monkeypatch.setattr(ops, "FP8_PAIR_CARVEOUT", cv)
        ys[cv] = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11011114, quant_pdl="first")
        assert ys[cv] is not None
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "triton")
    monkeypatch.setattr(ops, "FP8_EAGER_QUANT_CUDA", False)
    yt = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11011114, quant_pdl="early")
    assert torch.equal(ys[10], ys[-1]) and torch.equal(ys[0], ys[-1]) and torch.equal(yt, ys[-1])
    _check(ys[10], x, w, wsi, None, "pair with a carveout")
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
    monkeypatch.setattr(ops, "FP8_PAIR_CARVEOUT", 10)
    assert torch.equal(_pair_from_graph(x, w, wsi), ys[-1])


@pytest.mark.parametrize("m", [9, 16])
def test_pair_code_row_pad(monkeypatch, m):
    """The CUDA quantizer of the decode pair writes its code rows FP8_PAIR_CODE_ROW_PAD bytes apart: the same codes
    and scales as contiguous rows, and the same output bits at pads 0 / 16 / 128 / 896 (eagerly and from a graph);
    a pad that is not a non-negative multiple of 16 is refused, naming row_pad."""
    _ext()
    n, k = 2112, 7168
    w, wsi = _weight(n, k)
    x = _x(m, k, torch.bfloat16, 93 + m)
    q0, s0 = ops.quant_fp8_cuda(x, 128)
    q, s = ops.quant_fp8_cuda(x, 128, row_pad=896)
    assert q.shape == (m, k) and q.stride() == (k + 896, 1)
    assert torch.equal(q.view(torch.uint8), q0.view(torch.uint8)) and torch.equal(s, s0)
    for bad in (8, -16, 1.5):
        with pytest.raises(ValueError, match="row_pad"):
            ops.quant_fp8_cuda(x, 128, row_pad=bad)
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", "cuda")
    ys = {}
    for pad in (0, 16, 128, 896):
        monkeypatch.setattr(ops, "FP8_PAIR_CODE_ROW_PAD", pad)
        ys[pad] = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11011114, quant_pdl="first")
        assert ys[pad] is not None and torch.equal(ys[pad], ys[0]), pad
    _check(ys[896], x, w, wsi, None, f"pair with padded code rows, M={m}")
    assert torch.equal(_pair_from_graph(x, w, wsi), ys[0])


def test_preq_raw_op():
    C = _ext()
    n, k = 576, 7168
    w, wsi = _weight(n, k)
    x = _x(3, k, torch.bfloat16, 11)
    q, s = ops.per_token_group_quant_fp8(x, 128)
    ws = ops._cuda_workspace(x.device)
    assert C.fp8_block_gemv_supported(q, w, wsi, ws, 1011104, s) == 0
    assert C.fp8_block_gemv_resolve(q, w, wsi, ws, 0, s) // 1000000 == 1
    # a Q = 1 code without pre-quantized x is refused (code 5)
    assert C.fp8_block_gemv_supported(x, w, wsi, ws, 1011104) == 5
    y = C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.float16, 0, False)
    assert y.dtype == torch.float16
    _check(y.to(torch.bfloat16), x, w, wsi, None, "preq raw op, fp16 out")


def test_quantization_matches_quantizer():
    """Codes and scales are the quantizer's: a weight of one-hot rows reads q * sx back exactly."""
    _ext()
    k = 256
    n = 256
    w = torch.zeros(n, k, device=DEV)
    w[torch.arange(n), torch.arange(n)] = 1.0  # row j picks x[:, j]
    w = w.to(torch.float8_e4m3fn)
    wsi = torch.ones(2, 2, device=DEV)
    for dtype in (torch.bfloat16, torch.float16):
        x = _x(16, k, dtype, 7)
        x[3, :128] = 0  # an all-zero group: scale = eps / 448
        q, s = ops.per_token_group_quant_fp8(x, 128)
        want = q.float() * s.repeat_interleave(128, dim=1)
        y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=11016)  # 1 split: fp32 exact, then cast
        assert torch.equal(y, want.to(dtype)), "codes or scales differ from per_token_group_quant_fp8"


def test_graph_replay_split_k():
    _ext()
    n, k = 1536, 7168
    w, wsi = _weight(n, k)
    x = _x(4, k, torch.bfloat16, 3)
    for code in (41108, 0):
        eager = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = ops.fp8_block_gemv_cuda(x, w, wsi, None, config=code)
        g.replay()
        first = y.clone()
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(first, y) and torch.equal(first, eager), f"replays differ (config {code})"
    # the counters of every workspace (per stream, and the capture one) are back to zero
    for key, ws in ops._cuda_ws.items():
        assert int(ws[: ops._CUDA_WS_COUNTERS].abs().sum()) == 0, key


@pytest.mark.parametrize("quantizer", ["triton", "cuda"])
@pytest.mark.parametrize("trigger", ["first", "early"])
def test_pair_chain_in_a_graph(monkeypatch, trigger, quantizer):
    """Quantizer + GEMV pairs back to back in one CUDA graph, each layer's input the previous
    layer's output (GEMV -> quantizer -> GEMV, all PDL launches, no kernel in between): with the
    quantizer's trigger "first" the next GEMV is scheduled while the quantizer still waits for the
    GEMV before it, so every read of a result must still come after its producer. Replays on fresh x:
    each layer's output against the reference on that layer's input, and the whole chain bit for bit
    against the same chain run eagerly without PDL. On either quantizer (the CUDA one's pairs launch with
    FP8_PAIR_CARVEOUT)."""
    _ext()
    monkeypatch.setattr(ops, "FP8_CUDA_QUANTIZER", quantizer)
    n = k = 2048  # square, so the chain feeds itself; 16 row tiles
    m, depth = 16, 6
    layers = [_weight(n, k, seed=40 + i) for i in range(depth)]
    x = torch.empty(m, k, device=DEV, dtype=torch.bfloat16)

    def chain(h, pdl, qmode):
        outs = []
        for w, wsi in layers:
            h = ops.fp8_block_gemv_cuda(h, w, wsi, None, config=11011114, pdl=pdl, quant_pdl=qmode)
            assert h is not None
            outs.append(h)
        return outs

    x.copy_(_x(m, k, torch.bfloat16, 5))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain(x, True, trigger)  # warm-up outside the capture (workspace, compiled kernels)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = chain(x, True, trigger)
    for seed in (6, 7):
        x.copy_(_x(m, k, torch.bfloat16, seed))
        g.replay()
        torch.cuda.synchronize()
        ins = [x] + outs[:-1]
        for i, (w, wsi) in enumerate(layers):
            _check(outs[i], ins[i], w, wsi, None, f"layer {i} of the chain (trigger {trigger}, seed {seed})")
        eager = chain(x.clone(), False, "late")
        assert torch.equal(outs[-1], eager[-1]), f"graph chain differs from the eager one ({trigger}, seed {seed})"


def test_split_k_two_streams():
    """Split-K launches on two streams at once: each stream has its own counters and partials."""
    _ext()
    n, k = 1536, 7168
    w, wsi = _weight(n, k)
    xs = [_x(4, k, torch.bfloat16, 20 + i) for i in range(2)]
    want = [ops.fp8_block_gemv_cuda(x, w, wsi, None, config=41108) for x in xs]
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = [[], []]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    for _ in range(50):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                outs[i].append(ops.fp8_block_gemv_cuda(xs[i], w, wsi, None, config=41108))
    for s in streams:
        torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    for i in range(2):
        assert all(torch.equal(y, want[i]) for y in outs[i]), f"stream {i}: a result differs"


def test_fallbacks_to_triton():
    _ext()
    w, wsi = _weight(576, 7168)
    # misaligned x (pointer 2 bytes off a 16-byte boundary): "cuda" runs the Triton path
    buf = torch.randn(2, 7168 + 8, device=DEV).to(torch.bfloat16)
    x = buf[:, 1:7169]
    assert not ops._cuda_gemv_ok(x, w, (128, 128))
    y = ops.fp8_block_linear(x, w, wsi, backend="cuda")
    _check(y, x, w, wsi, None, "misaligned x")
    # K % 128 != 0
    w2 = (torch.randn(256, 192, device=DEV) * 8).to(torch.float8_e4m3fn)
    s2 = torch.rand(2, 2, device=DEV) * 1e-2
    x2 = torch.randn(3, 192, device=DEV).to(torch.bfloat16)
    y2 = ops.fp8_block_linear(x2, w2, s2, backend="cuda")
    _check(y2, x2, w2, s2, None, "K=192")
    # M > 16 and fp32 x
    x3 = _x(17, 7168, torch.bfloat16, 0)
    _check(ops.fp8_block_linear(x3, w, wsi, backend="cuda"), x3, w, wsi, None, "M=17")
    assert ops.fp8_block_gemv_cuda(x3, w, wsi) is None
    assert ops.fp8_block_gemv_cuda(x3[:4].float(), w, wsi) is None


# Each error case of the raw op, run in a child process (a crash there is a test failure naming the
# case, not the end of pytest). Every case prints "CASE <name> <outcome>"; outcome "ok" when the op
# raised the expected error type with the expected word in its message (or returned the expected code).
_ERROR_CASES = textwrap.dedent(
    """
    import sys, torch
    from qlinear.kernels import cuda_ext
    C = cuda_ext.load()
    DEV = "cuda"
    w = (torch.randn(576, 7168, device=DEV) * 8).to(torch.float8_e4m3fn)
    wsi = torch.rand(5, 56, device=DEV) * 1e-3 + 1e-4
    ws = torch.zeros(4096 + 1024, dtype=torch.int32, device=DEV)
    x = torch.randn(2, 7168, device=DEV).to(torch.bfloat16)
    buf = torch.randn(2, 7168 + 8, device=DEV).to(torch.bfloat16)
    q = torch.zeros(2, 7168, device=DEV).to(torch.float8_e4m3fn)
    s = torch.ones(2, 56, device=DEV)
    cases = [
        ("uint8_weight", TypeError, "weight", lambda: C.fp8_block_gemv(x, w.view(torch.uint8), wsi, None, ws, 0, False, 1e-10)),
        ("wsi_shape", RuntimeError, "weight_scale_inv", lambda: C.fp8_block_gemv(x, w, wsi[:, :3], None, ws, 0, False, 1e-10)),
        ("bias_shape", RuntimeError, "bias", lambda: C.fp8_block_gemv(x, w, wsi, torch.zeros(5, device=DEV, dtype=torch.bfloat16), ws, 0, False, 1e-10)),
        ("misaligned_x", RuntimeError, "not supported", lambda: C.fp8_block_gemv(buf[:, 1:7169], w, wsi, None, ws, 0, False, 1e-10)),
        ("small_workspace", RuntimeError, "workspace", lambda: C.fp8_block_gemv(x, w, wsi, None, torch.zeros(10, dtype=torch.int32, device=DEV), 0, False, 1e-10)),
        ("x_on_cpu", RuntimeError, "x", lambda: C.fp8_block_gemv(x.cpu(), w, wsi, None, ws, 0, False, 1e-10)),
        ("scale_eps", RuntimeError, "scale_eps", lambda: C.fp8_block_gemv(x, w, wsi, None, ws, 0, False, 0.0)),
        ("preq_scales_shape", RuntimeError, "x_scales", lambda: C.fp8_block_gemv_preq(q, s[:, :5], w, wsi, None, ws, torch.bfloat16, 0, False)),
        ("preq_codes_dtype", TypeError, "xq", lambda: C.fp8_block_gemv_preq(x, s, w, wsi, None, ws, torch.bfloat16, 0, False)),
        ("preq_out_dtype", TypeError, "out_dtype", lambda: C.fp8_block_gemv_preq(q, s, w, wsi, None, ws, torch.float32, 0, False)),
        ("preq_code_without_scales", None, 5, lambda: C.fp8_block_gemv_supported(x, w, wsi, ws, 1011104)),
        ("split_k_small_workspace", None, 6, lambda: C.fp8_block_gemv_supported(x, w, wsi, ws, 81002)),
    ]
    for name, err, want, fn in cases:
        print("START", name, flush=True)
        try:
            got = fn()
        except Exception as e:  # noqa: BLE001
            ok = err is not None and isinstance(e, err) and str(want) in str(e)
            print("CASE", name, "ok" if ok else f"wrong error {type(e).__name__}: {str(e)[:200]!r}", flush=True)
            continue
        ok = err is None and got == want
        print("CASE", name, "ok" if ok else f"no error (returned {got!r})", flush=True)
    """
)


def test_raw_op_errors():
    _ext()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + [p for p in sys.path if p])
    r = subprocess.run([sys.executable, "-c", _ERROR_CASES], capture_output=True, text=True, timeout=120, env=env)
    lines = r.stdout.splitlines()
    started = [ln.split()[1] for ln in lines if ln.startswith("START ")]
    bad = [ln for ln in lines if ln.startswith("CASE ") and not ln.endswith(" ok")]
    if r.returncode != 0:
        last = started[-1] if started else "(before the first case)"
        pytest.fail(f"error-case process died (rc {r.returncode}) in case {last}; stderr tail: {r.stderr[-800:]}")
    assert not bad, "\n".join(bad)
    assert len([ln for ln in lines if ln.startswith("CASE ")]) == len(started) == 12, r.stdout


def test_auto_dispatch(monkeypatch):
    _ext()
    w, wsi = _weight(576, 7168)
    x = _x(4, 7168, torch.bfloat16, 1)
    monkeypatch.delenv("QLINEAR_FP8_BLOCK_BACKEND", raising=False)
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", 0)
    assert ops.fp8_block_backend(x, w, (128, 128), wsi) != "cuda"
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", {(576, 7168): 4, None: 0})
    assert ops.fp8_block_backend(x, w, (128, 128), wsi) == "cuda"
    assert ops.fp8_block_backend(_x(5, 7168, torch.bfloat16, 1), w, (128, 128), wsi) != "cuda"
    _check(ops.fp8_block_linear(x, w, wsi), x, w, wsi, None, "auto")
    monkeypatch.setattr(ops, "FP8_CUDA_MAX_M", 16)
    assert ops.fp8_block_backend(_x(16, 7168, torch.bfloat16, 1), w, (128, 128), wsi) == "cuda"
    assert ops.fp8_block_backend(_x(17, 7168, torch.bfloat16, 1), w, (128, 128), wsi) != "cuda"
