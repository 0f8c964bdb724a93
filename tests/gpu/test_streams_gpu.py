"""Kernels launched on several CUDA streams at once give the same results as launched serially.

Every kernel qlinear ships (RMSNorm / fused-add RMSNorm on the CUDA extension and Triton, FP8
per-token-group quantization, fused RMSNorm -> FP8, FP8 block GEMM with split-K, W4A16 GEMV /
split-K MMA, and the cuBLAS-backed paths) runs on DeepSeek-V3 MLA shapes:

1. serially on the default stream, one input set after another (the reference);
2. on ``STREAMS`` side streams, launches interleaved round-robin for ``ITERS`` rounds, so kernels
   of different streams overlap (in-place ops get fresh copies of their inputs each round);
3. from ``STREAMS`` Python threads, each with its own stream.

Our own kernels must match the serial run bit for bit (their split-K reductions sum in a fixed
order, their split-K counters are per stream); cuBLAS may legitimately pick another algorithm per
stream / workspace, so its paths are compared to one rounding of the output dtype.

Run on the GPU machine: ``python -m pytest tests/gpu/test_streams_gpu.py -q``; with ``$OUT`` set,
one JSON line per case goes to ``$OUT/streams_gpu.json``.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Callable

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

STREAMS = 4
ITERS = 3
T, H = 64, 7168  # tokens, hidden (DeepSeek-V3)
N, K = 2112, 7168  # fused q_a_proj + kv_a_proj_with_mqa over hidden 7168
E4M3 = torch.float8_e4m3fn
RESULTS: list[dict] = []


@pytest.fixture(scope="module", autouse=True)
def _write_results():
    yield
    out = os.environ.get("OUT")
    if out and RESULTS:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "streams_gpu.json"), "a", encoding="utf-8") as f:
            for row in RESULTS:
                f.write(json.dumps(row) + "\n")


def _gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


@dataclass
class Case:
    """``make(seed) -> dict of inputs``; ``run(inputs) -> tuple of result tensors`` (fresh outputs,
    or the inputs an in-place op wrote); ``exact``: compare bit for bit (else one rounding)."""

    make: Callable[[int], dict]
    run: Callable[[dict], tuple]
    exact: bool = True
    needs: Callable[[], str | None] = lambda: None  # reason to skip, or None


def _norm_inputs(seed, residual=False):
    g = _gen(seed)
    buf = torch.randn(T, H + 192, device="cuda", generator=g).to(torch.bfloat16)
    out = {"x": buf[:, 64 : 64 + H], "w": (torch.rand(H, device="cuda", generator=g) + 0.5).to(torch.bfloat16)}
    if residual:
        out["r"] = torch.randn(T, H, device="cuda", generator=g).to(torch.bfloat16)
    return out


def _cuda_ext_missing():
    from qlinear.kernels import cuda_ext

    return None if cuda_ext.is_available() else f"CUDA norm extension unavailable: {cuda_ext.failure_reason()}"


def _fp8_weight(seed):
    g = _gen(seed)
    w = (torch.randn(N, K, device="cuda", generator=g) * 8).clamp(-448, 448).to(E4M3)
    s = torch.rand((N + 127) // 128, (K + 127) // 128, device="cuda", generator=g) * 1e-3 + 1e-4
    return w, s


def _fp8_block_inputs(m):
    def make(seed):
        w, s = _fp8_weight(seed)
        x = torch.randn(m, K, device="cuda", generator=_gen(seed + 1)).to(torch.bfloat16)
        return {"x": x, "w": w, "s": s}

    return make


def _scaled_mm_block_missing():
    from qlinear.ops.fp8 import fp8_block_backend

    x = torch.empty(64, K, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(N, K, device="cuda", dtype=E4M3)
    return None if fp8_block_backend(x, w) == "scaled_mm" else "torch._scaled_mm blockwise FP8 not available here"


def _scaled_mm_missing():
    from qlinear.ops.fp8 import fp8_scaled_backend

    x = torch.empty(16, K, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(N, K, device="cuda", dtype=E4M3)
    return None if fp8_scaled_backend(x, w) == "scaled_mm" else "torch._scaled_mm FP8 not available here"


_PACKED: dict = {}


def _w4a16_inputs(m, act_order=False):
    def make(seed):
        from qlinear.ops.w4a16 import pack_w4a16

        key = act_order
        if key not in _PACKED:  # one weight for every input set: only x differs
            g = _gen(1234)
            q = torch.randint(0, 16, (N, K), device="cuda", generator=g, dtype=torch.int32).to(torch.uint8)
            zeros = torch.randint(0, 16, (N, K // 128), device="cuda", generator=g, dtype=torch.int32).to(torch.uint8)
            scales = (torch.rand(N, K // 128, device="cuda", generator=g) * 0.02 + 1e-3).to(torch.float16).float()
            g_idx = None
            if act_order:
                g_idx = []
                for i, (r0, r1) in enumerate(((0, 1536), (1536, N))):
                    perm = torch.randperm(K, device="cuda", generator=_gen(77 + i))
                    gi = torch.empty(K, dtype=torch.int32, device="cuda")
                    gi[perm] = (torch.arange(K, device="cuda") // 128).to(torch.int32)
                    g_idx.append((r0, r1, gi))
            _PACKED[key] = pack_w4a16(q, zeros, scales, 128, bits=4, g_idx=g_idx)
        x = torch.randn(m, K, device="cuda", generator=_gen(seed)).to(torch.bfloat16) * 0.5
        return {"x": x, "packed": _PACKED[key]}

    return make


def _cases() -> dict[str, Case]:
    from qlinear.ops import (
        fp8_block_linear,
        fp8_scaled_linear,
        fused_add_rms_norm,
        per_token_group_quant_fp8,
        rms_norm,
        rms_norm_quant_fp8,
        w4a16_linear,
    )

    def fused(backend):
        def run(d):
            fused_add_rms_norm(d["x"], d["r"], d["w"], 1e-6, backend=backend)
            return d["x"], d["r"]

        return run

    cases = {}
    for be in ("cuda", "triton"):
        needs = _cuda_ext_missing if be == "cuda" else (lambda: None)
        cases[f"rms_norm-{be}"] = Case(_norm_inputs, lambda d, be=be: (rms_norm(d["x"], d["w"], 1e-6, backend=be),), needs=needs)
        cases[f"rms_norm-inplace-{be}"] = Case(
            _norm_inputs, lambda d, be=be: (rms_norm(d["x"], d["w"], 1e-6, out=d["x"], backend=be),), needs=needs)
        cases[f"fused_add_rms_norm-{be}"] = Case(lambda s: _norm_inputs(s, residual=True), fused(be), needs=needs)
    cases["per_token_group_quant_fp8-triton"] = Case(
        _norm_inputs, lambda d: per_token_group_quant_fp8(d["x"], 128, column_major_scales=True, backend="triton"))
    cases["rms_norm_quant_fp8-triton"] = Case(
        _norm_inputs, lambda d: rms_norm_quant_fp8(d["x"], d["w"], 1e-6, 128, backend="triton"))
    cases["fused_add_rms_norm_quant_fp8-triton"] = Case(
        lambda s: _norm_inputs(s, residual=True),
        lambda d: (*rms_norm_quant_fp8(d["x"], d["w"], 1e-6, 128, residual=d["r"], backend="triton"), d["r"]))
    for m in (1, 16, 64):
        cases[f"fp8_block_linear-triton-M{m}"] = Case(
            _fp8_block_inputs(m), lambda d: (fp8_block_linear(d["x"], d["w"], d["s"], (128, 128), backend="triton"),))
    cases["fp8_block_linear-scaled_mm-M64"] = Case(
        _fp8_block_inputs(64), lambda d: (fp8_block_linear(d["x"], d["w"], d["s"], (128, 128), backend="scaled_mm"),),
        exact=False, needs=_scaled_mm_block_missing)
    cases["fp8_scaled_linear-scaled_mm-M16"] = Case(
        _fp8_block_inputs(16),
        lambda d: (fp8_scaled_linear(d["x"], d["w"], d["s"][:, :1].repeat_interleave(128, 0)[:N].reshape(-1).contiguous(),
                                     backend="scaled_mm"),),
        exact=False, needs=_scaled_mm_missing)
    for m in (1, 16, 64):
        cases[f"w4a16-triton-M{m}"] = Case(_w4a16_inputs(m), lambda d: (w4a16_linear(d["x"], d["packed"], backend="triton"),))
    cases["w4a16-triton-act_order-M1"] = Case(
        _w4a16_inputs(1, act_order=True), lambda d: (w4a16_linear(d["x"], d["packed"], backend="triton"),))
    cases["w4a16-dequant_cublas-M600"] = Case(
        _w4a16_inputs(600), lambda d: (w4a16_linear(d["x"], d["packed"], backend="dequant_cublas"),), exact=False)
    return cases


CASES = _cases() if torch.cuda.is_available() else {}
CASE_IDS = sorted(CASES) if CASES else ["none"]


def _clone_inputs(d):
    # keep views as views (same strides, fresh buffer), leave packed weights shared (read only)
    out = {}
    for k, v in d.items():
        if isinstance(v, torch.Tensor):
            base = v if v._base is None else v._base
            fresh = base.clone()
            out[k] = fresh.as_strided(v.shape, v.stride(), v.storage_offset() - base.storage_offset() + fresh.storage_offset())
        else:
            out[k] = v
    return out


def _compare(name, got, want, exact) -> float:
    assert len(got) == len(want)
    worst = 0.0
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name}: {g.shape}/{g.dtype} vs {w.shape}/{w.dtype}"
        if g.dtype == E4M3:
            g, w = g.view(torch.uint8), w.view(torch.uint8)
        diff = (g.float() - w.float()).abs().max().item() if g.numel() else 0.0
        worst = max(worst, diff)
        if exact:
            assert torch.equal(g, w), f"{name}: differs from the serial run (max abs diff {diff})"
        else:
            scale = max(1.0, w.float().abs().max().item())
            torch.testing.assert_close(g.float(), w.float(), rtol=1.6e-2, atol=1.6e-2 * scale, msg=lambda m: f"{name}: {m}")
    return worst


@pytest.mark.parametrize("name", CASE_IDS)
def test_streams_match_serial(name):
    case = CASES[name]
    reason = case.needs()
    if reason:
        pytest.skip(reason)
    inputs = [case.make(100 + i) for i in range(STREAMS)]
    serial = [case.run(_clone_inputs(d)) for d in inputs]  # also compiles / builds everything once
    torch.cuda.synchronize()
    serial = [tuple(t.clone() for t in res) for res in serial]

    # interleaved launches on side streams
    fresh = [[_clone_inputs(d) for _ in range(ITERS)] for d in inputs]
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    default = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(default)  # inputs were written on the default stream
    results = [[None] * ITERS for _ in range(STREAMS)]
    for it in range(ITERS):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                results[i][it] = case.run(fresh[i][it])
    torch.cuda.synchronize()
    worst = 0.0
    for i in range(STREAMS):
        for it in range(ITERS):
            worst = max(worst, _compare(f"{name} stream {i} round {it}", results[i][it], serial[i], case.exact))

    # one stream per Python thread
    fresh = [[_clone_inputs(d) for _ in range(ITERS)] for d in inputs]
    torch.cuda.synchronize()
    threaded = [[None] * ITERS for _ in range(STREAMS)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(STREAMS)

    def work(i):
        try:
            stream = torch.cuda.Stream()
            barrier.wait()
            with torch.cuda.stream(stream):
                for it in range(ITERS):
                    threaded[i][it] = case.run(fresh[i][it])
            stream.synchronize()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(STREAMS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    torch.cuda.synchronize()
    if errors:
        raise errors[0]
    for i in range(STREAMS):
        for it in range(ITERS):
            worst = max(worst, _compare(f"{name} thread {i} round {it}", threaded[i][it], serial[i], case.exact))
    RESULTS.append({"case": name, "streams": STREAMS, "iters": ITERS, "exact": case.exact, "max_abs_diff": worst,
                    "device": torch.cuda.get_device_name(), "ok": True})
