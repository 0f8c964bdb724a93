"""FP8 block Triton path at M = 8 / 12 / 16 on the wide shapes (issue 4: 24576x1536 <= 14 us and
7168x16384 <= 36 us at M <= 16): the whole op (quantization launch + GEMM) over split-K and swap-AB
configs around GEMM_CONFIGS, against the committed dispatch ("auto"); cold weights (copies rotated
past L2), alternated graph replays. One line per case: ``WIDE M=16 NxK config us``.

    python benchmarks/probe_fp8_wide.py [--out DIR] [--ms 8 12 16] [--shapes NxK,...] [--fused]
        [--set s8|ku|ku3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved, cold_fp8_block_weights, env_info, rel_err_check, runnable, write_results  # noqa: E402

from qlinear.kernels import fp8_triton as ft  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402

G = ft.GemmConfig
CANDIDATES = {
    (24576, 1536): [G(16, 64, 1, 4, 5), G(16, 64, 1, 4, 4), G(16, 64, 1, 4, 6), G(16, 128, 1, 4, 4), G(16, 128, 1, 4, 5),
                    G(16, 32, 1, 4, 5), G(16, 64, 2, 4, 5), G(16, 128, 1, 8, 4), G(16, 64, 1, 2, 5),
                    G(16, 128, 1, 4, 4, swap_ab=True), G(16, 64, 1, 4, 4, swap_ab=True), G(16, 128, 1, 4, 3, swap_ab=True),
                    G(16, 256, 1, 8, 3, swap_ab=True), G(16, 128, 2, 4, 4, swap_ab=True)],
    (7168, 16384): [G(16, 64, 6, 4, 3), G(16, 64, 6, 4, 4), G(16, 64, 4, 4, 3), G(16, 64, 8, 4, 3), G(16, 64, 6, 4, 5),
                    G(16, 128, 4, 4, 3), G(16, 128, 5, 4, 4), G(16, 64, 3, 4, 4), G(16, 32, 8, 4, 4),
                    G(16, 128, 5, 4, 4, swap_ab=True), G(16, 128, 3, 4, 4, swap_ab=True), G(16, 128, 4, 4, 5, swap_ab=True),
                    G(16, 64, 6, 4, 4, swap_ab=True), G(16, 256, 3, 8, 3, swap_ab=True)],
}

# --set ku (session 18): K blocks per loop iteration (k_unroll 2 / 4: each weight row's consecutive
# K blocks requested together) around the table's entries
KU_CANDIDATES = {
    (24576, 1536): [G(16, 64, 1, 4, 4, swap_ab=True), G(16, 64, 1, 4, 4), G(16, 64, 1, 4, 4, swap_ab=True, k_unroll=2),
                    G(16, 64, 1, 4, 2, swap_ab=True, k_unroll=2), G(16, 64, 1, 4, 3, swap_ab=True, k_unroll=2),
                    G(16, 128, 1, 4, 2, swap_ab=True, k_unroll=2), G(16, 64, 1, 4, 2, k_unroll=2),
                    G(16, 64, 1, 4, 3, k_unroll=2), G(16, 64, 1, 4, 2, swap_ab=True, k_unroll=4)],
    (7168, 16384): [G(16, 64, 6, 4, 3), G(16, 128, 5, 4, 4, swap_ab=True), G(16, 64, 6, 4, 3, k_unroll=2),
                    G(16, 64, 6, 4, 2, k_unroll=2), G(16, 64, 3, 4, 2, k_unroll=2),
                    G(16, 128, 5, 4, 4, swap_ab=True, k_unroll=2), G(16, 128, 5, 4, 2, swap_ab=True, k_unroll=2),
                    G(16, 128, 5, 4, 3, swap_ab=True, k_unroll=2), G(16, 64, 6, 4, 3, swap_ab=True, k_unroll=2),
                    G(16, 128, 5, 4, 2, swap_ab=True, k_unroll=4), G(16, 64, 6, 4, 2, k_unroll=4)],
}

# --set ku3 (session 18 run 3): the 24576x1536 k_unroll entry against the entry before it and the
# same stage count without k_unroll
KU3_CANDIDATES = {
    (24576, 1536): [G(16, 64, 1, 4, 4, swap_ab=True), G(16, 64, 1, 4, 3, swap_ab=True),
                    G(16, 64, 1, 4, 3, swap_ab=True, k_unroll=2), G(16, 64, 1, 4, 4, swap_ab=True, k_unroll=2),
                    G(16, 64, 1, 4, 5, swap_ab=True)],
}


def label(c: ft.GemmConfig) -> str:
    ku = f" ku{c.k_unroll}" if c.k_unroll > 1 else ""
    return f"({c.block_m},{c.block_n},{c.split_k},{c.num_warps},{c.num_stages}){' swap' if c.swap_ab else ''}{ku}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[8, 12, 16])
    ap.add_argument("--shapes", default="24576x1536,7168x16384", help="comma-separated NxK (keys of CANDIDATES)")
    ap.add_argument("--fused", action="store_true",
                    help="also time each non-swap config with the quantization fused into the GEMM (fuse_quant=True)")
    ap.add_argument("--set", choices=("s8", "ku", "ku3"), default="s8",
                    help="candidate lists: session 8's, k_unroll (session 18 run 2 / run 3)")
    args = ap.parse_args()
    shapes = {tuple(int(v) for v in sh.split("x")) for sh in args.shapes.split(",") if sh}
    torch.manual_seed(0)
    rows = []
    sets = {"s8": CANDIDATES, "ku": KU_CANDIDATES, "ku3": KU3_CANDIDATES}
    for (n, k), cands in sets[args.set].items():
        if (n, k) not in shapes:
            continue
        ws, ss = cold_fp8_block_weights(n, k)
        copies = len(ws)
        for m in args.ms:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            want = ref.fp8_block_linear_ref(x, ws[0], ss[0], (128, 128)).float()
            fns = {"auto": lambda i: ops.fp8_block_linear(x, ws[i % copies], ss[i % copies])}
            for c in cands:
                fns[label(c)] = (lambda cfg: lambda i: ft.fp8_block_linear_triton(
                    x, ws[i % copies], ss[i % copies], (128, 128), config=cfg, fuse_quant=False))(c)
                if args.fused and not c.swap_ab:
                    fns[label(c) + " fused"] = (lambda cfg: lambda i: ft.fp8_block_linear_triton(
                        x, ws[i % copies], ss[i % copies], (128, 128), config=cfg, fuse_quant=True))(c)
            ok = runnable(fns, rel_err_check(want), f"WIDE M={m} {n}x{k} ")
            res = bench_graphs_interleaved(ok, n_buffers=copies, reps=15, target_replay_us=1000.0)
            best = min((nm for nm in res if nm != "auto"), key=lambda nm: res[nm]["median_us"])
            for name, t in res.items():
                print(f"WIDE M={m} {n}x{k} {name:<28s} {t['median_us']:7.2f} us", flush=True)
                rows.append(dict(case=f"M={m} {n}x{k}", impl=name, us=t["median_us"], p20_us=t["p20_us"], p80_us=t["p80_us"]))
            print(f"WIDE BEST M={m} {n}x{k}: {best} {res[best]['median_us']:.2f} vs auto {res['auto']['median_us']:.2f}", flush=True)
        del ws, ss
        torch.cuda.empty_cache()
    write_results("fp8_wide_probe", rows, {**env_info(), "weights": "cold (copies rotated past L2)"}, args.out, metric="us")


if __name__ == "__main__":
    main()
