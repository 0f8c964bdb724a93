"""Where the FP8 Triton path's time grows with M on the wide shapes (issue 4: 7168x16384 takes
~33.4 us at M = 1 and ~37 at M = 16 in bench_linear): per M, the quantizer alone, each GEMM config
alone on codes quantized outside the graph, and the pairs (quantizer + GEMM, PDL as dispatched),
with the quantizer's trigger late / early and with 16 rows per quantizer program; the auto
dispatch. Cold weights, alternated graph replays. One line per case: ``MGROW M=16 NxK name us``.

    python benchmarks/probe_fp8_mgrow.py [--out DIR] [--ms 1 4 16] [--shapes 7168x16384,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import cold_fp8_block_weights, env_info, rel_err_check, runnable, time_case_rows, write_results  # noqa: E402

from qlinear.kernels import fp8_triton as ft  # noqa: E402
from qlinear.ops import fp8 as ops  # noqa: E402
from qlinear.reference import fp8 as ref  # noqa: E402

G = ft.GemmConfig
CONFIGS = {
    (7168, 16384): {"split": G(16, 64, 6, 4, 3), "swap": G(16, 128, 5, 4, 4, swap_ab=True)},
    (24576, 1536): {"swap": G(16, 64, 1, 4, 4, swap_ab=True),
                    "swapku2": G(16, 64, 1, 4, 3, swap_ab=True, k_unroll=2)},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--shapes", default="7168x16384")
    ap.add_argument("--layouts", action="store_true",
                    help="also the GEMMs on row-major scales, and at M < 16 on column-major scales of stride 16")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for sh in args.shapes.split(","):
        n, k = (int(v) for v in sh.split("x"))
        ws, ss = cold_fp8_block_weights(n, k)
        copies = len(ws)
        for m in args.ms:
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            q, s = ft.per_token_group_quant_fp8(x, 128, column_major_scales=True)
            want = ref.fp8_block_linear_ref(x, ws[0], ss[0], (128, 128)).float()
            fns = {"quantizer": lambda i: ft.per_token_group_quant_fp8(x, 128, column_major_scales=True)}
            for name, cfg in CONFIGS[(n, k)].items():
                fns[f"gemm {name}"] = (lambda c: lambda i: ft.fp8_block_gemm(
                    q, s, ws[i % copies], ss[i % copies], (128, 128), torch.bfloat16, config=c))(cfg)
                for trig in ("late", "early"):
                    fns[f"pair {name} q {trig}"] = (lambda c, t: lambda i: ft.fp8_block_linear_triton(
                        x, ws[i % copies], ss[i % copies], (128, 128), config=c, quant_pdl=t))(cfg, trig)

                def rows16(i, c=cfg):
                    qq, sq = ft.per_token_group_quant_fp8(x, 128, column_major_scales=True, rows_per_prog=16)
                    w, sw = ws[i % copies], ss[i % copies]
                    return ft.fp8_block_gemm(qq, sq, w, sw, (128, 128), torch.bfloat16, config=c)

                fns[f"pair {name} q rows16"] = rows16
                if args.layouts:
                    # the scale layout the GEMM is specialized on: row-major scales make its K stride 1
                    # at every M (column-major: M, which Triton specializes as 1 at M = 1 only); and at
                    # M < 16 column-major scales of 16 rows (the K stride of M = 16) cut to M rows
                    sr = s.contiguous()  # row-major copy of the same scales
                    fns[f"gemm {name} rowmajor"] = (lambda c: lambda i: ft.fp8_block_gemm(
                        q, sr, ws[i % copies], ss[i % copies], (128, 128), torch.bfloat16, config=c))(cfg)
                    if m < 16:
                        pad = torch.zeros(s.shape[1], 16, device=s.device)
                        pad[:, :m] = s.t()
                        s16 = pad.t()[:m]  # strides (1, 16)
                        fns[f"gemm {name} colmajor16"] = (lambda c: lambda i: ft.fp8_block_gemm(
                            q, s16, ws[i % copies], ss[i % copies], (128, 128), torch.bfloat16, config=c))(cfg)
            fns["auto"] = lambda i: ops.fp8_block_linear(x, ws[i % copies], ss[i % copies])
            ok = runnable(fns, rel_err_check(want), f"MGROW M={m} {n}x{k} ")
            time_case_rows(ok, copies, "MGROW", f"M={m} {n}x{k}", rows, width=26)
        del ws, ss
        torch.cuda.empty_cache()
    meta = {**env_info(), "weights": "cold (copies rotated past L2)"}
    write_results("fp8_mgrow_probe", rows, meta, args.out, metric="us")


if __name__ == "__main__":
    main()
