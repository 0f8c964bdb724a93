#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 7 at d80c879.
# Session 29 run 7: Nsight Compute of the pre-quantized FP8 GEMV (11011114) alone on 2112x7168 at M = 9 / 12 /
# 16 (caches flushed before each profiled launch: cold weights): why M = 12 -> 16 costs 0.6 us where 9 -> 12
# costs 0.1 (runs 5-6).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29f
NCU_EXTRA="--section MemoryWorkloadAnalysis_Tables --section SourceCounters" \
  gpu_ncu ncu 240 "fp8_gemv_kernel" benchmarks/probe_fp8_ncu.py --preq-ms 9,12,16 --code 11011114
