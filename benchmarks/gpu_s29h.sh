#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 9 at f6d3ae0.
# Session 29 run 9: run 8 again after its fixes (the GPU test's cross-backend tolerance, the benchmark's
# per-chain reference), on the two MLA shapes at M = 1 / 16 only (the device time left).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29h.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29h
gpu_pytest prequant 100 tests/gpu/test_fp8_quantized_gpu.py
timeout 80 python benchmarks/bench_fp8_prequant.py --out "$OUT/bench" --ms 1 16 --shapes 2112x7168 24576x1536 \
    2>&1 | tee "$OUT/bench.log" | grep -v "^$"
