#!/usr/bin/env bash
# Session 9's last run: the ragged-K accuracy probe (whose codes differ, GPU vs CPU reference), the
# Triton path with the quantization fused on 24576x1536 at M = 4 / 16, then bench_linear --format
# w4a16 with the interleaved timing (the issue-5 acceptance file; W4A16 code unchanged since session 8).
#   OUT=/some/dir bash benchmarks/gpu_s9final.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s9final
timeout 60 python benchmarks/probe_fp8_ragged.py --draws ${DRAWS:-60} 2>&1 | tee "$OUT/ragged.log" | grep -E "RAGGED|rror"
mkdir -p "$OUT/wide"
timeout 90 python benchmarks/probe_fp8_wide.py --out "$OUT/wide" --ms 4 16 --shapes 24576x1536 --fused 2>&1 | tee "$OUT/wide.log" | grep -E "WIDE BEST|fused|auto|rror"
timeout 300 python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 24
gpu_cleanup
