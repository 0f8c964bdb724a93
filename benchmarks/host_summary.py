"""Summary of bench_host.py passes of several trees: host time per call as a multiple of its in-pass anchor.

Per case: the median over passes of the host time per call divided by its anchor's in the same pass (``F.linear``
for the layers, ``F.rms_norm`` for ``rms_norm``), and the median difference in microseconds. A ratio to an anchor timed in the same process is what carries over between
passes: the device machine's CPU ran the same ``F.linear`` call at 17 to 28 us in different processes.

    python benchmarks/host_summary.py --tree old=DIR_GLOB --tree new=DIR_GLOB --out DIR [--name host_eager]

Each DIR_GLOB matches pass folders holding ``host.json``. Writes ``<name>.json`` and ``<name>.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
from pathlib import Path

from _timing import write_results


def anchor_of(impl: str) -> str:
    return "F.rms_norm q_c" if impl.startswith("rms_norm") else "F.linear bf16"


def summarize(passes: list[dict]) -> dict[tuple[str, str], dict]:
    """(case, impl) -> median ratio to the anchor, median difference (us), pass count."""
    ratios: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for data in passes:
        by = {(r["case"], r["impl"]): r["host_us"] for r in data["rows"]}
        for (case, impl), us in by.items():
            anchor = by.get((case, anchor_of(impl)))
            if impl.startswith("F.") or anchor is None:
                continue
            ratios.setdefault((case, impl), []).append((us / anchor, us - anchor))
    return {key: dict(ratio=statistics.median(v[0] for v in vals), extra_us=statistics.median(v[1] for v in vals),
                      passes=len(vals)) for key, vals in ratios.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=GLOB of pass folders")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="host_eager")
    args = ap.parse_args()
    rows, metas, env = [], {}, None
    for spec in args.tree:
        name, pattern = spec.split("=", 1)
        paths = sorted(glob.glob(str(Path(pattern) / "host.json")))
        if not paths:
            raise SystemExit(f"--tree {spec}: no host.json under {pattern}")
        passes = [json.loads(Path(p).read_text()) for p in paths]
        env = env or passes[0]["meta"]
        metas[name] = sorted({p["meta"]["git_commit"] for p in passes})
        for (case, impl), s in summarize(passes).items():
            rows.append(dict(case=f"{case} {impl}", tree=name, impl=impl, ratio=s["ratio"], extra_us=s["extra_us"],
                             passes=s["passes"]))
            print(f"{name:<5s} {case:<20s} {impl:<18s} x{s['ratio']:.2f} of its anchor (+{s['extra_us']:6.1f} us), "
                  f"{s['passes']} passes")
    meta = dict(what=__doc__.splitlines()[0], trees=metas,
                **{k: env[k] for k in ("gpu", "torch", "triton", "cuda", "python") if k in env})
    write_results(args.name, rows, meta, args.out, metric="ratio", label="tree")


if __name__ == "__main__":
    main()
