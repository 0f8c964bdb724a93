"""DIAGNOSTIC (session 19; needs the tracing build of csrc/w4a16_wgmma.cuh, to be reverted): per-CTA
phase times of the wgmma W4A16 GEMM from %globaltimer stamps the kernel writes into the split-K
counter buffer (slots 8192 + 8 cta + e): e0 entry, e1 prologue done (barriers, first fills issued),
e2 first stage arrived, e3 main loop done, e4 partials stored, e5 past the rendezvous / last arrival,
e6 end; slot 7 = SM id. Cold weights (copies rotated), one launch at a time after a sync; per case
the median over REPEATS launches of each phase's min / median / max over CTAs, ns.

    python benchmarks/probe_w4a16_trace.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.kernels import _splitk  # noqa: E402
from qlinear.ops import w4a16 as ops  # noqa: E402

CASES = [((2112, 7168), 128, (128, 7, 4, 2)), ((2112, 7168), 128, (128, 7, 4, 1)), ((2112, 7168), 128, (128, 1, 4)),
         ((24576, 1536), 128, None), ((7168, 16384), 128, (128, 2, 4, 2))]
PHASES = [("start", None, 0), ("prologue", 0, 1), ("first_data", 1, 2), ("main", 2, 3), ("store", 3, 4),
          ("wait", 4, 5), ("sum", 5, 6), ("end", None, 6)]
REPEATS = 9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    locks = _splitk.locks(torch.device("cuda"))
    out = []
    for (n, k), m, cfg in CASES:
        packs, _, _, _ = cold_layers(n, k)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        per_phase = {name: [] for name, _, _ in PHASES}
        spans = []
        for i in range(REPEATS + 2):
            locks[8192:].zero_()
            torch.cuda.synchronize()
            ops.cuda_wgmma(x, packs[i % len(packs)], None, cfg)
            torch.cuda.synchronize()
            tr = locks[8192:].view(-1, 8).cpu().to(torch.int64)
            tr = tr[tr[:, 0] != 0]
            if i < 2:
                continue
            t0 = int(tr[:, 0].min())
            ev = tr[:, :7] - t0
            spans.append(int(ev[:, 6].max()))
            for name, a, b in PHASES:
                d = ev[:, b] if a is None else ev[:, b] - ev[:, a]
                if a is not None and b >= 4 and (cfg is None or (len(cfg) > 1 and cfg[1] == 1)):
                    d = torch.zeros_like(d)  # no split: e4 / e5 are not written
                d = d.tolist()
                per_phase[name].append((min(d), statistics.median(d), max(d)))
        ctas = int(tr.shape[0])
        locks[8192:].zero_()
        row = {"case": f"M={m} {n}x{k}", "config": cfg, "ctas": ctas, "span_ns": statistics.median(spans), "phases": {}}
        line = [f"TRACE M={m} {n}x{k} cfg={cfg} ctas={ctas} span {row['span_ns']:.0f} ns |"]
        for name, _, _ in PHASES:
            v = per_phase[name]
            mmm = tuple(statistics.median(t[j] for t in v) for j in range(3))
            row["phases"][name] = mmm
            line.append(f"{name} {mmm[0]:.0f}/{mmm[1]:.0f}/{mmm[2]:.0f}")
        print(" ".join(line), flush=True)
        out.append(row)
    torch.cuda.synchronize()
    assert int(locks.abs().sum()) == 0
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "trace.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
