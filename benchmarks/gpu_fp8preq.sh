#!/usr/bin/env bash
# Probe of the pre-quantized FP8 decode path on 2112x7168 vs 1536x7168 at M = 16
# (benchmarks/probe_fp8_preq.py).   OUT=/some/dir bash benchmarks/gpu_fp8preq.sh   # ~40 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8preq
timeout 90 python benchmarks/probe_fp8_preq.py --out "$OUT" 2>&1 | tee "$OUT/fp8preq.log" | grep -E "PREQ|rror"
gpu_cleanup
