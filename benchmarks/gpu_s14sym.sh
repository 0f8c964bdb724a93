#!/usr/bin/env bash
# Session 14: the whole-layer benchmark reads the wgmma GEMM ~6-7 us slower at M = 64 / 128 on
# 7168x16384 than probe_w4a16_gemm.py does (66.7 / 76.8 vs 59.5 / 70.8); the probe's layers have zero
# points, the acceptance runs' are symmetric. bench_linear at M = 64 / 128 for both formats, same machine.
#   OUT=/some/dir bash benchmarks/gpu_s14sym.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14sym
timeout 100 python benchmarks/bench_linear.py --format w4a16 --ms 64 128 --out "$OUT/sym" 2>&1 | tail -n 6
timeout 100 python benchmarks/bench_linear.py --format w4a16-asym --ms 64 128 --out "$OUT/asym" 2>&1 | tail -n 6
gpu_cleanup
