#!/usr/bin/env bash
# Session 11: bench_linear --format fp8-block on the sm_90a build (the extension's targets changed from
# sm_90 to sm_90a this session; the FP8 kernels' sources did not).
#   OUT=/some/dir bash benchmarks/gpu_s11fp8.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11fp8
timeout ${LIN_LIMIT:-220} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
