"""Per-instruction warp-stall samples from an Nsight Compute report (``ncu --import REPORT --page source
--csv --print-source sass``), summarized: per profiled kernel, the stall reasons' share of all samples
and the instructions with the most samples (their SASS and top reasons).

    python benchmarks/ncu_stalls.py SOURCE_PAGE.csv [--top 40]
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys


def _num(v: str) -> float:
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    text = open(args.csv, errors="replace").read()
    # one CSV table per kernel, each starting with its header row (the first field "Address" or "#")
    blocks = re.split(r'\n(?="(?:#|Address)")', text)
    for bi, block in enumerate(blocks):
        rows = list(csv.reader(io.StringIO(block)))
        rows = [r for r in rows if r]
        if len(rows) < 2:
            continue
        head = rows[0]
        idx = {h: i for i, h in enumerate(head)}
        src = next((i for i, h in enumerate(head) if h.lower() in ("source", "sass")), None)
        total_col = next((i for i, h in enumerate(head) if "Warp Stall Sampling (All" in h), None)
        reason_cols = [i for i, h in enumerate(head) if h.startswith("stall_") or "Stall" in h and "(All" not in h
                       and "Not-issued" not in h and i != total_col]
        if total_col is None:
            print(f"[block {bi}] no stall-sampling column; header: {head[:30]}")
            continue
        body = rows[1:]
        total = sum(_num(r[total_col]) for r in body if len(r) > total_col)
        print(f"== kernel block {bi}: {len(body)} instructions, {total:.0f} samples")
        sums = {head[i]: sum(_num(r[i]) for r in body if len(r) > i) for i in reason_cols}
        for name, v in sorted(sums.items(), key=lambda kv: -kv[1])[:14]:
            if v > 0:
                print(f"   {name:<48} {v:9.0f} {100 * v / max(total, 1):5.1f} %")
        ranked = sorted((r for r in body if len(r) > total_col), key=lambda r: -_num(r[total_col]))[: args.top]
        for r in ranked:
            reasons = sorted(((head[i], _num(r[i])) for i in reason_cols if len(r) > i), key=lambda kv: -kv[1])[:3]
            rs = ", ".join(f"{n.replace('stall_', '')}={v:.0f}" for n, v in reasons if v > 0)
            addr = r[idx["Address"]] if "Address" in idx else r[0]
            print(f"   {addr:>6} {_num(r[total_col]):7.0f}  {(r[src] if src is not None else '')[:70]:<70} {rs}")
        del idx
    sys.stdout.flush()


if __name__ == "__main__":
    main()
