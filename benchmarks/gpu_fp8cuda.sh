#!/usr/bin/env bash
# One-launch FP8 block decode kernel (issue 4, backend "cuda", csrc/fp8_gemv.cuh): build, its GPU
# tests, then benchmarks/bench_fp8_cuda.py (committed auto path vs "cuda" with each candidate launch
# config, cold weights, whole op).   OUT=/some/dir bash benchmarks/gpu_fp8cuda.sh   # <= ~150 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8cuda
timeout 50 python -m pytest -q -p no:cacheprovider -x tests/gpu/test_fp8_cuda_gemv.py \
    --junitxml="$OUT/fp8cuda_junit.xml" 2>&1 | tail -n 15
tests_rc=${PIPESTATUS[0]}
timeout 85 python benchmarks/bench_fp8_cuda.py --out "$OUT" 2>&1 | tail -n 140
bench_rc=${PIPESTATUS[0]}
echo "build rc=$build_rc (${build_s} s) tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t_all )) s"
gpu_cleanup
exit $(( build_rc != 0 || tests_rc != 0 || bench_rc != 0 ))
