#!/usr/bin/env bash
# FP8 small M on the GPU (issue 4): the swap-AB kernel's GPU tests, then benchmarks/bench_fp8_ab.py
# (committed launch knobs vs PDL bound 16, L2 weight prefetch, multi-row quantizer; cold weights).
#   OUT=/some/dir bash benchmarks/gpu_fp8ab.sh        # <= ~150 s on an H200
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-$PWD}"
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_swapab_gpu.py --junitxml="$OUT/fp8_swapab_junit.xml" 2>&1 | tail -n 8
tests_rc=${PIPESTATUS[0]}
timeout 85 python benchmarks/bench_fp8_ab.py --out "$OUT" 2>&1 | tail -n 30
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
