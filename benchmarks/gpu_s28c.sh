#!/usr/bin/env bash
# RECORD ONLY: ran in session 28 (runs 2-3: 0d1bf66 / 9abb50b; run 4: c764e37; run 5: 26d9179); codes it names may no longer be compiled (csrc/fp8_tma.cuh kTmaKeys).
# Session 28 run 4: the FP8 dispatch with the TMA ring kernel on 7168x16384 (M <= 16, code 101042304,
# quantizer trigger early): build, the FP8 GPU tests (TMA ring, register kernel incl. auto dispatch, the
# public op), then the issue-4 acceptance benchmark (bench_linear --format fp8-block) at this commit.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s28c
gpu_pytest tma 120 tests/gpu/test_fp8_tma_gpu.py
gpu_pytest fp8cuda 150 tests/gpu/test_fp8_cuda_gemv.py -k "auto or preq or graph or shapes"
gpu_pytest fp8 200 tests/gpu/test_fp8_gpu.py
timeout ${FP8_LIMIT:-240} python benchmarks/bench_linear.py --format fp8-block --out "$OUT/bench" 2>&1 | tee "$OUT/bench.log" | tail -n 40
