"""Session 11 diagnosis of the wgmma W4A16 GEMM (csrc/w4a16_wgmma.cuh): the bf16 128-token 4-stage
instance (and for mode 8 the 256-token one) timed as built with QLINEAR_WG_DIAG (0 full kernel, 1 no
dequantization, 2 no wgmma, 4 wait_group 0, 8 warpgroups dequantize in turns: set per process, read
once by the launcher), cold weights, graph replays.
One line per case: ``DIAG mode=.. case config us``.

    QLINEAR_WG_DIAG=1 python benchmarks/probe_w4a16_wgmma_diag.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import bench_graphs_interleaved  # noqa: E402
from bench_w4a16 import cold_layers  # noqa: E402

from qlinear.ops import w4a16 as ops  # noqa: E402

CASES = [((2112, 7168), 128, (128, 0, 4)), ((7168, 16384), 128, (128, 2, 4)), ((24576, 1536), 128, (128, 1, 4)),
         ((7168, 16384), 1024, (128, 1, 4)), ((7168, 16384), 1024, (256, 1, 3)), ((24576, 1536), 1024, (256, 1, 3))]


def main() -> None:
    mode = os.environ.get("QLINEAR_WG_DIAG", "0")
    for (n, k), m, cfg in CASES:
        packs, _, _, _ = cold_layers(n, k)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        nb = len(packs)
        res = bench_graphs_interleaved({"wg": lambda i: ops.cuda_wgmma(x, packs[i % nb], None, cfg)}, n_buffers=nb,
                                       reps=5, target_replay_us=800.0)
        us = res["wg"]["median_us"]
        print(f"DIAG mode={mode} M={m} {n}x{k} {cfg} {us:9.2f} us {2 * m * n * k / us / 1e6:7.1f} TFLOP/s", flush=True)
        del packs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
