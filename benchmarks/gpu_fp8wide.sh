#!/usr/bin/env bash
# FP8 Triton configs at M = 8 / 12 / 16 on 24576x1536 and 7168x16384 (benchmarks/probe_fp8_wide.py).
#   OUT=/some/dir bash benchmarks/gpu_fp8wide.sh   # ~120 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
timeout 240 python benchmarks/probe_fp8_wide.py --out "$OUT" 2>&1 | tee "$OUT/fp8wide.log" | grep -E "WIDE|rror"
gpu_cleanup
