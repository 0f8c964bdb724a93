"""Shared benchmark helpers: CUDA-graph timing with quantiles, a device copy ceiling measured in
the same run, environment info, and JSON + PNG result files.

    bench_graph(fn, n_buffers=1)  -> {"median_us", "p20_us", "p80_us", "method"}
    bench_graphs_interleaved({name: fn}) -> the same per name, graph replays alternated
    rotated(fns, xs)              -> (fn(i) = fns[i % len(fns)](xs[i % len(xs)]), buffers)
    bench_rotated(fns, xs)        -> bench_graph of rotated(fns, xs)
    buffers_to_defeat_l2(bytes_per_call) -> how many input sets to rotate through
    copy_ceiling_gbps()           -> device-to-device copy rate, read + write bytes counted
    env_info()                    -> GPU, torch, triton, CUDA, git commit
    write_results(name, rows, meta, out_dir) -> (json path, png path or None)

Timing: the first :func:`bench_graph` of a process first keeps the GPU busy for 0.5 s
(:func:`warm_up_gpu`) so clocks have ramped. ``fn(i)`` runs one call on input set
``i % n_buffers``. A CUDA graph captures ``inner`` consecutive calls cycling through the input sets (so data that would fit in L2 comes
from HBM when the caller provides enough sets); every replay is timed with CUDA events and
divided by ``inner``. Falls back to ``triton.testing.do_bench`` when capture fails.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable

import torch

__all__ = ["bench_graph", "bench_graphs_interleaved", "bench_rotated", "rotated", "buffers_to_defeat_l2", "cold_fp8_block_weights", "copy_ceiling_gbps", "env_info", "write_results", "l2_bytes",
           "warm_up_gpu", "runnable"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def l2_bytes() -> int:
    """L2 cache size of the current GPU (50 MiB when unknown, an H100/H200's size)."""
    try:
        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size)
    except (AttributeError, RuntimeError):
        return 50 * 2**20


def buffers_to_defeat_l2(bytes_per_call: int, max_buffers: int = 512) -> int:
    """Input sets to rotate through so that consecutive calls touch >= 3x the L2 size."""
    if bytes_per_call <= 0:
        return 1
    need = -(-3 * l2_bytes() // bytes_per_call)
    return max(1, min(max_buffers, need))


def cold_fp8_block_weights(n: int, k: int, max_buffers: int = 24) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Random FP8 block-quantized weights for decode benchmarks with cold weights: as many copies as
    :func:`buffers_to_defeat_l2` asks for (at most ``max_buffers``) of an e4m3 ``[n, k]`` weight
    (2 * N(0, 1) rounded to e4m3) and its fp32 128 x 128 block scales in [2^-8, 2^-8 + 2^-7), drawn from
    torch's global generator in that order. Returns (weights, scales)."""
    copies = buffers_to_defeat_l2(n * k, max_buffers=max_buffers)
    ws = [(torch.randn(n, k, device="cuda") * 2).to(torch.float8_e4m3fn) for _ in range(copies)]
    ss = [torch.rand((n + 127) // 128, k // 128, device="cuda") * 2**-7 + 2**-8 for _ in range(copies)]
    return ws, ss


def _quantiles(samples_us: list[float]) -> dict[str, float]:
    s = sorted(samples_us)
    q = statistics.quantiles(s, n=10, method="inclusive") if len(s) > 1 else [s[0]] * 9
    return {"median_us": statistics.median(s), "p20_us": q[1], "p80_us": q[7]}


_warmed = False


def warm_up_gpu(seconds: float | None = None) -> None:
    """Keep the GPU busy for ``seconds`` (default ``$QLINEAR_BENCH_WARMUP_S``, else 0.5) so its
    clocks have ramped up before the first timing; :func:`bench_graph` calls it once per process.

    An H200 idles at a few hundred MHz: in session 4 the same 16x7168 RMSNorm measured 1.86 us
    first thing in a fresh process and 1.68 us after other benchmarks. A serving GPU is never
    idle, so warm clocks are the case to measure.
    """
    global _warmed
    _warmed = True
    if seconds is None:
        seconds = float(os.environ.get("QLINEAR_BENCH_WARMUP_S", "0.5"))
    if seconds <= 0:
        return
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    elapsed_ms = 0.0
    while elapsed_ms < seconds * 1e3:
        start.record()
        for _ in range(20):
            a = torch.mm(a, a).clamp_(-1, 1)  # clamp: the values stay finite
        end.record()
        end.synchronize()
        elapsed_ms += start.elapsed_time(end)


# Below this eager time per call, _sized_inner re-times the call inside a small CUDA graph.
_EAGER_BOUND_US = 1000.0


def _sized_inner(fn: Callable[[int], object], n_buffers: int, warmup: int, target_replay_us: float) -> int:
    """Warm ``fn`` up on a side stream (the stream graph capture will use), time 4 eager calls and
    return the calls per replay for ~``target_replay_us``: at least ``n_buffers`` (a multiple of it,
    so every input set is used) and at least 4, at most 2000."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(max(warmup, 1) * max(1, min(n_buffers, 4))):
            fn(i % n_buffers)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(4):
        fn(i % n_buffers)
    end.record()
    torch.cuda.synchronize()
    rough_us = max(start.elapsed_time(end) * 1000.0 / 4, 0.5)
    if rough_us < _EAGER_BOUND_US:
        # Eager calls may be paced by the CPU (Python dispatch, guards, launch: 20-100 us), not the
        # GPU: sizing on them gave 16-32 calls per replay for a 1.5 us kernel, so the replay's own
        # launch (a few us) was charged ~0.3 us per call. Time a small graph instead.
        k = -(-32 // n_buffers) * n_buffers
        graph = _captured(fn, n_buffers, k)
        torch.cuda.synchronize()
        rough_us = max(min(_replay_us(graph, k) for _ in range(3)), 0.5)
        del graph
    inner = int(min(2000, max(4, n_buffers, target_replay_us // rough_us)))
    return -(-inner // n_buffers) * n_buffers


def _captured(fn: Callable[[int], object], n_buffers: int, inner: int) -> "torch.cuda.CUDAGraph":
    """A graph of ``inner`` consecutive calls ``fn(i % n_buffers)``, replayed once."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(inner):
            fn(i % n_buffers)
    graph.replay()
    return graph


def _replay_us(graph: "torch.cuda.CUDAGraph", inner: int) -> float:
    """Microseconds per call of one timed replay."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / inner


def bench_graph(
    fn: Callable[[int], object],
    n_buffers: int = 1,
    inner: int | None = None,
    reps: int = 30,
    warmup: int = 2,
    target_replay_us: float = 2000.0,
) -> dict[str, float | str]:
    """Median / p20 / p80 microseconds per call of ``fn(i)`` (see the module docstring).

    ``inner`` calls per graph replay default to enough for ~``target_replay_us`` per replay, at
    least ``n_buffers`` (every input set used) and at least 4.
    """
    if not _warmed:
        warm_up_gpu()
    sized = _sized_inner(fn, n_buffers, warmup, target_replay_us)
    inner = sized if inner is None else inner
    try:
        graph = _captured(fn, n_buffers, inner)
        torch.cuda.synchronize()
        samples = [_replay_us(graph, inner) for _ in range(reps)]
        del graph
        out: dict[str, float | str] = dict(_quantiles(samples))
        out["method"] = f"cuda_graph(inner={inner})"
        return out
    except Exception as exc:  # capture not possible (e.g. a sync inside fn): time eagerly
        torch.cuda.synchronize()
        import triton.testing

        counter = [0]

        def call():
            fn(counter[0] % n_buffers)
            counter[0] += 1

        med, p20, p80 = triton.testing.do_bench(call, quantiles=[0.5, 0.2, 0.8])
        return {"median_us": med * 1000, "p20_us": p20 * 1000, "p80_us": p80 * 1000,
                "method": f"do_bench (graph capture failed: {type(exc).__name__})"}


def bench_graphs_interleaved(
    fns: dict[str, Callable[[int], object]],
    n_buffers: int = 1,
    reps: int = 30,
    target_replay_us: float = 2000.0,
    settle: bool = True,
) -> dict[str, dict]:
    """Like :func:`bench_graph` for several callables at once, with their graph replays
    alternated (a, b, a, b, ...) instead of timed one after the other.

    A comparison of two ~200 us steps is about a few %, while the clocks of a busy H200 drift by
    more than that between measurements seconds apart; alternating single replays puts both
    sides in the same thermal state. ``settle``: each timed replay follows an untimed replay of the
    same graph. Without it the replay right after a heavy candidate read slow (session 6: one
    kernel 34.65 us right after bf16 F.linear on 7168x16384, 31.81 us two slots later in the same
    round), a clock / power state that outlasts the heavy graph. Returns ``{name: {"median_us", "p20_us", "p80_us",
    "samples_us", "method"}}``; ``samples_us[r]`` of every name come from the same round ``r``.
    """
    if not _warmed:
        warm_up_gpu()
    graphs, inners = {}, {}
    for name, fn in fns.items():
        inners[name] = _sized_inner(fn, n_buffers, 2, target_replay_us)
        graphs[name] = _captured(fn, n_buffers, inners[name])
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, graph in graphs.items():
            if settle:
                graph.replay()
            samples[name].append(_replay_us(graph, inners[name]))
    graphs.clear()
    how = "replays alternated, each after an untimed one" if settle else "replays alternated"
    return {name: {**_quantiles(v), "samples_us": v, "method": f"cuda_graph(inner={inners[name]}), {how}"}
            for name, v in samples.items()}


def runnable(fns: dict[str, Callable[[int], object]], check: Callable[[str, object], None] | None = None,
             label: str = "", on_error: Callable[[str, Exception], None] | None = None) -> dict[str, Callable[[int], object]]:
    """The candidates of ``fns`` that run, ahead of timing them: each is called once (``fn(0)``,
    which also compiles it) and synchronized, then ``check(name, result)``, when given, may raise
    for a wrong result. A candidate that raises (a config a launcher refuses, a wrong output) is
    printed as ``<label><name>: skipped (...)``, passed to ``on_error(name, exc)`` when given (e.g.
    to record it as a row), and left out."""
    ok = {}
    for name, fn in fns.items():
        try:
            result = fn(0)
            torch.cuda.synchronize()
            if check is not None:
                check(name, result)
            ok[name] = fn
        except Exception as exc:  # noqa: BLE001 - reported and left out, the others are still timed
            print(f"{label}{name}: skipped ({type(exc).__name__}: {str(exc)[:140]})", flush=True)
            if on_error is not None:
                on_error(name, exc)
    return ok


def rel_err_check(want: torch.Tensor, tol: float = 1e-2, skip: tuple[str, ...] = ()) -> Callable[[str, object], None]:
    """A ``check`` for :func:`runnable`: raises when a candidate's output differs from ``want`` by
    more than ``tol`` in relative Frobenius norm; candidates named in ``skip`` (anchors that are not
    the same computation) and results that are not tensors (e.g. a quantizer's tuple) pass."""

    def check(name: str, y: object) -> None:
        if name in skip or not isinstance(y, torch.Tensor):
            return
        err = ((y.float() - want).norm() / want.norm()).item()
        if not err <= tol:
            raise RuntimeError(f"rel err {err:.3g}")

    return check


def rotated(fns, xs) -> tuple[Callable[[int], object], int]:
    """Call ``i`` = ``fns[i % len(fns)](xs[i % len(xs)])`` and the number of buffers that uses every
    weight copy and input set: ``fns`` one callable per weight copy (a single callable is one copy),
    ``xs`` the input sets."""
    fns = list(fns) if isinstance(fns, (list, tuple)) else [fns]
    return (lambda i: fns[i % len(fns)](xs[i % len(xs)])), max(len(fns), len(xs))


def bench_rotated(fns, xs, **kwargs) -> dict[str, float | str]:
    """:func:`bench_graph` of :func:`rotated` ``(fns, xs)``: weights and inputs both rotate."""
    fn, n_buffers = rotated(fns, xs)
    return bench_graph(fn, n_buffers=n_buffers, **kwargs)


def copy_ceiling_gbps(nbytes: int = 1 << 30) -> float:
    """GB/s of a large device-to-device copy (read + write bytes counted, 1 GB = 1e9 bytes).

    The best of two copies: ``copy_`` (inside a CUDA graph a same-dtype copy becomes a memcpy
    node served by the copy engines, which on an H200 moved only ~2.7 TB/s in our first run)
    and an elementwise kernel on the SMs (``torch.add(src, 0, out=dst)``), which is what every
    memory-bound kernel here competes with.
    """
    src = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    src.uniform_(-1, 1)
    t_memcpy = bench_graph(lambda i: dst.copy_(src), inner=8, reps=15)["median_us"]
    t_kernel = bench_graph(lambda i: torch.add(src, 0, out=dst), inner=8, reps=15)["median_us"]
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (min(t_memcpy, t_kernel) * 1e-6) / 1e9


def _git_commit() -> str:
    """``QLINEAR_GIT_COMMIT``, else a ``GIT_COMMIT`` file at the tree's root (written by
    benchmarks/snapshot.sh into a ``git archive`` copy, where ``git rev-parse`` would name the
    enclosing checkout's HEAD instead), else ``git rev-parse HEAD`` (+ "-dirty")."""
    if os.environ.get("QLINEAR_GIT_COMMIT"):
        return os.environ["QLINEAR_GIT_COMMIT"]
    root = Path(__file__).resolve().parents[1]
    stamp = root / "GIT_COMMIT"
    if stamp.is_file():
        return stamp.read_text().strip() + " (snapshot)"
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def env_info() -> dict[str, str]:
    """GPU name, torch / triton / CUDA / Python versions and the git commit."""
    info = {
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "python": platform.python_version(),
        "git_commit": _git_commit(),
    }
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = "not installed"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        info["sm_count"] = str(p.multi_processor_count)
        info["capability"] = f"{p.major}.{p.minor}"
    return info


def time_case_rows(fns: dict[str, Callable[[int], object]], n_buffers: int, tag: str, case: str, rows: list[dict],
                   width: int = 30) -> dict[str, dict]:
    """Time ``fns`` with :func:`bench_graphs_interleaved` (15 reps, ~1 ms replays), print one line
    ``<tag> <case> <name> <median> us`` per candidate and append ``{case, impl, us, p20_us, p80_us}``
    rows to ``rows``; returns the timings."""
    res = bench_graphs_interleaved(fns, n_buffers=n_buffers, reps=15, target_replay_us=1000.0)
    for name, t in res.items():
        print(f"{tag} {case} {name:<{width}s} {t['median_us']:7.2f} us", flush=True)
        rows.append(dict(case=case, impl=name, us=t["median_us"], p20_us=t["p20_us"], p80_us=t["p80_us"]))
    return res


def record_gbps_rows(res: dict[str, dict], rows: list[dict], case: str, nbytes: int, width: int = 20,
                     **fields) -> None:
    """For each candidate of a :func:`bench_graphs_interleaved` result: print ``<case> <name> <median>
    us <GB/s>`` (GB/s of ``nbytes`` per call) and append its timings without the raw samples, plus
    ``case``, ``impl``, ``gbps`` and ``fields``, to ``rows``."""
    for name, r in res.items():
        r = {key: v for key, v in r.items() if key != "samples_us"}
        gbps = nbytes / (r["median_us"] * 1e-6) / 1e9
        rows.append(dict(case=case, impl=name, gbps=gbps, **fields, **r))
        print(f"{case:>18}  {name:<{width}} {r['median_us']:8.2f} us {gbps:7.0f} GB/s", flush=True)


def write_results(name: str, rows: list[dict], meta: dict, out_dir: str | os.PathLike | None = None,
                  metric: str = "gbps", label: str = "impl", group: str = "case") -> tuple[Path, Path | None]:
    """Write ``{meta, rows}`` to ``<out_dir>/<name>.json`` and a grouped bar chart of
    ``row[metric]`` per ``row[group]`` / ``row[label]`` to ``<name>.png`` (skipped, returning
    None, when matplotlib is missing)."""
    out = Path(out_dir) if out_dir else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG written", file=sys.stderr)
        return json_path, None
    groups = list(dict.fromkeys(r[group] for r in rows if r.get(metric) is not None))
    labels = list(dict.fromkeys(r[label] for r in rows if r.get(metric) is not None))
    if not groups:
        return json_path, None
    values = {(r[group], r[label]): r[metric] for r in rows if r.get(metric) is not None}
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(groups) * max(1, len(labels)) / 3), 6))
    width = 0.8 / max(1, len(labels))
    for k, lab in enumerate(labels):
        xs = [g + k * width for g in range(len(groups))]
        ys = [values.get((grp, lab), 0.0) for grp in groups]
        ax.bar(xs, ys, width=width, label=lab)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(metric)
    if "copy_ceiling_gbps" in meta and metric == "gbps":
        ax.axhline(meta["copy_ceiling_gbps"], color="k", linestyle="--", linewidth=1, label="copy ceiling")
    ax.set_title(f"{name} — {meta.get('gpu', '')}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png_path = out / f"{name}.png"
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return json_path, png_path
