#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 3 at 55f8e38.
# Session 30 run 3: more SW = 2 neighbours of the two-token-tile dispatch: 261434 (16-row pair split, two
# CTAs per SM), 262424 (two stages) on 2112x7168, 224464 (six stages) on 7168x16384, with the TMA tests
# over every code; then the norm-quant chain at decode sizes after session 29's dispatch change
# (bench_fp8_prequant.py, not measured there).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30c
gpu_pytest tma_tests 200 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 100 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes few --ms 9 16 \
    --reps 9 --codes 262434 261434 262424
gpu_probe tma_many 100 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes many --ms 9 16 \
    --reps 9 --codes 224444 224464
timeout 90 python benchmarks/bench_fp8_prequant.py --out "$OUT/prequant_bench" --ms 1 16 \
    --shapes 2112x7168 24576x1536 2>&1 | tee "$OUT/prequant_bench.log" | grep -v "^$" | tail -n 30
gpu_cleanup
