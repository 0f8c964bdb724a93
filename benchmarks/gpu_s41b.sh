#!/usr/bin/env bash
# RECORD ONLY: ran in session 41 run 2 at 277856f (its bench_linear step later became gpu_bench_format: the same steps;
# the console shows the log's last 30 lines, not 40).
# Session 41 run 2: the SM clock and board power while bf16 F.linear, the W4A16 layer and the FP8 block layer each
# run back to back on 2112x7168 at M = 1024 (benchmarks/probe_clocks.py, nvidia-smi sampling), and at M = 16; then
# bench_linear --format fp8-block on the tree as committed (the FP8 acceptance file dates from session 28).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s41b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s41b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit,power.draw --format=csv | tee "$OUT/smi.txt"
timeout 120 python benchmarks/probe_clocks.py --out "$OUT/clk1024" --formats w4a16 fp8-block --m 1024 2>&1 \
    | tee "$OUT/clk1024.log"
timeout 60 python benchmarks/probe_clocks.py --out "$OUT/clk16" --formats fp8-block --m 16 --rounds 1 2>&1 \
    | tee "$OUT/clk16.log"
gpu_bench_format fp8-block 330
gpu_cleanup
