#!/usr/bin/env bash
# Session 10, second sweep of the W4A16 register kernel with pipe 2 (chunks round-robin over the
# warps): bench_w4reg.py at M = 1 / 4 / 8 (2112x7168 and 24576x1536 now at M = 4 / 8 too, and the
# R4 U1 / R2 U2 / R1 U2 W12-14 pipe 2 configs for the short and few classes).
#   OUT=/some/dir bash benchmarks/gpu_s10rr2.sh   # ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10rr2
timeout 400 python benchmarks/bench_w4reg.py --out "$OUT" --ms 1 4 8 > "$OUT/w4reg_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "BEST|CLASS|SET|RING|skipped|Error" "$OUT/w4reg_bench.txt" | head -60
gpu_cleanup
