#!/usr/bin/env bash
# Session 12: the mma.sync W4A16 GEMM's K-split reduction made split-major (the V loads of one split
# issued together; same sums): its GPU tests, then probe_w4a16_gemm.py (gemm family) on 7168x16384 at
# M = 17 / 32 / 64 with automatic and 4 splits, against the dispatch (which takes this kernel for
# M <= 32 there) and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s12gemm.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12gemm
gpu_pytest gemm_tests ${G_T:-200} -x tests/gpu/test_w4a16_gemm_gpu.py -k "cuda_gemm"
gpu_probe g32 ${P1_T:-150} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family gemm --ms 17 32 64 --shapes 7168x16384 --splits 0 4
gpu_cleanup
