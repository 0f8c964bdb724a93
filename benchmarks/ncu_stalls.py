"""Per-instruction warp-stall samples from an Nsight Compute report, summarized per profiled kernel: the
stall reasons' shares of all samples and the instructions with the most samples (SASS, top reasons).

Input: the report's source page as CSV, ``ncu --import REPORT --page source --csv --print-source sass``
(collected with ``--section SourceCounters``): per kernel a "Kernel Name" row, a header row starting with
"Address", then one row per SASS instruction with "Warp Stall Sampling (All Samples)" and one
``stall_<reason>`` column per reason (plus ``stall_<reason> (Not Issued)``, the samples in which the
warp issued nothing, left out here: they are a subset of the others). Some samples have no reason
column (most of those on a group's first wgmma, in session 27's reports): they count in the totals only,
so the reasons' shares need not add up to 100 %.

    python benchmarks/ncu_stalls.py SOURCE_PAGE.csv [--top 40] [--kernels 1 5]
"""

from __future__ import annotations

import argparse
import csv
import sys


def _num(v: str) -> float:
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


def kernels(path: str):
    """(kernel name, header, rows) per profiled kernel of the CSV, in report order."""
    name, head, rows = None, None, []
    with open(path, newline="", errors="replace") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "Kernel Name":
                if head is not None:
                    yield name, head, rows
                name, head, rows = (row[1] if len(row) > 1 else "?"), None, []
            elif row[0] == "Address":
                head = row
            elif head is not None:
                rows.append(row)
    if head is not None:
        yield name, head, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40, help="instructions listed per kernel")
    ap.add_argument("--kernels", type=int, nargs="*", default=None, help="1-based kernel numbers (default: all)")
    args = ap.parse_args()
    for k, (name, head, rows) in enumerate(kernels(args.csv), start=1):
        if args.kernels and k not in args.kernels:
            continue
        total_col = next((i for i, h in enumerate(head) if h.startswith("Warp Stall Sampling (All")), None)
        if total_col is None:
            print(f"== kernel {k}: {name[:100]}: no stall-sampling column (collect with --section SourceCounters)")
            continue
        src = head.index("Source") if "Source" in head else None
        reasons = [i for i, h in enumerate(head) if h.startswith("stall_") and "Not Issued" not in h]
        rows = [r for r in rows if len(r) == len(head)]
        total = sum(_num(r[total_col]) for r in rows)
        print(f"== kernel {k}: {name[:100]}: {len(rows)} instructions, {total:.0f} samples")
        sums = {head[i][6:]: sum(_num(r[i]) for r in rows) for i in reasons}
        for reason, v in sorted(sums.items(), key=lambda kv: -kv[1])[:10]:
            if v > 0:
                print(f"   {reason:<20} {v:9.0f} {100 * v / max(total, 1):5.1f} %")
        for r in sorted(rows, key=lambda r: -_num(r[total_col]))[: args.top]:
            top = sorted(((head[i][6:], _num(r[i])) for i in reasons), key=lambda kv: -kv[1])[:3]
            why = ", ".join(f"{n}={v:.0f}" for n, v in top if v > 0) or "(no reason column)"
            text = r[src].strip() if src is not None else ""
            print(f"   {r[0][-6:]:>6} {_num(r[total_col]):7.0f}  {text[:64]:<64} {why}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
