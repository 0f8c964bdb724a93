#!/usr/bin/env bash
# Session 33 run 5: cuda_gemv(out=) (rows of a larger output): the decode kernels' tests; then M = 17 / 24 / 32
# through blocks of at most 16 rows (each with the automatic decode kernel of its M) against the automatic
# dispatch and bf16 F.linear on the three shapes (benchmarks/probe_w4a16_chunks.py).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s33e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s33e
gpu_pytest cuda_tests 240 tests/gpu/test_w4a16_cuda_gpu.py
gpu_probe chunks 240 "CHUNKS|rror|Traceback|skipped" benchmarks/probe_w4a16_chunks.py --reps 11
gpu_cleanup
