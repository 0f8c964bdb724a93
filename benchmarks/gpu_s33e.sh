#!/usr/bin/env bash
# RECORD ONLY: ran in session 33 run 5 at a18d304.
# Session 33 run 5: cuda_gemv(out=) and the "cuda" backend past 16 rows (blocks of 16, one launch each, into
# one output; auto for 7168x16384 up to M = 32): the decode kernels' tests, the layer tests through the auto
# dispatch; then "cuda" (blocks) against the mma.sync GEMM, Triton
# and bf16 F.linear (benchmarks/probe_w4a16_chunks.py; M = 17 / 24 / 32 on 7168x16384 and 2112x7168).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s33e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s33e
gpu_pytest cuda_tests 240 tests/gpu/test_w4a16_cuda_gpu.py
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_pytest gemm_dispatch 120 tests/gpu/test_w4a16_gemm_gpu.py -k "auto_dispatch"
gpu_probe chunks 240 "CHUNKS|rror|Traceback|skipped" benchmarks/probe_w4a16_chunks.py --reps 11 --ms 17 24 32 --shapes many few
gpu_cleanup
