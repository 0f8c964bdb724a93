"""Prints the ``--cand`` that beat ``--row`` at ``--m`` on ``--shape`` in every probe log given (of several such, the
one with the least time summed over the logs), else an empty line.

The logs are ``probe_w4a16_gemm.py``'s (lines ``GEMM M=<m> <shape>  wg <config>  <us> us``). A GPU script uses it
to choose whether ``bench_linear`` runs with a candidate as the dispatch row (``gpu_bench_linear``):
    choice=$(python benchmarks/probe_beats_row.py --m 1024 --shape 2112x7168 --row 256,0,3,0,64 \\
        --cand 256,0,3,0,64,3 "$OUT/a.log" "$OUT/b.log")
"""

from __future__ import annotations

import argparse
import re


def times(path: str, m: int, shape: str) -> dict[str, float]:
    """The ``wg`` configs' times (us) at M = m on shape in one probe log."""
    pat = re.compile(rf"GEMM M={m} {re.escape(shape)}\s+wg (\S+)\s+([\d.]+) us")
    out = {}
    with open(path) as f:
        for line in f:
            hit = pat.match(line)
            if hit:
                out[hit.group(1)] = float(hit.group(2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, required=True)
    ap.add_argument("--shape", required=True, help="NxK as the probe prints it")
    ap.add_argument("--row", required=True, help="the dispatch row's config")
    ap.add_argument("--cand", required=True, action="append", help="a candidate config (repeatable)")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    logs = [times(path, args.m, args.shape) for path in args.logs]
    wins = [c for c in args.cand if all(c in t and args.row in t and t[c] < t[args.row] for t in logs)]
    print(min(wins, key=lambda c: sum(t[c] for t in logs)) if wins else "")


if __name__ == "__main__":
    main()
