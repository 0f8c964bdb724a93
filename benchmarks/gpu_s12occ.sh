#!/usr/bin/env bash
# Session 12: the wgmma W4A16 GEMM's 64-token instance capped at 128 registers for two CTAs per SM
# (code 2084; run 3's Nsight Compute: latency-bound at two warps per scheduler): the GEMM GPU tests,
# then probe_w4a16_gemm.py at M = 128 (64-token instances, splits 0 / 2 / 4 / 8 / 16) against the
# committed dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s12occ.sh
# Ran once (session 12 run 6, f42a623); the instance never beat the committed dispatch and was removed
# after it, so this script needs that commit.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12occ
gpu_pytest wg_tests ${WG_T:-200} -x tests/gpu/test_w4a16_gemm_gpu.py -k "cuda_wgmma"
gpu_probe o128 ${P1_T:-150} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 --splits 0 2 4 8 16 --tokens 64
gpu_probe o256 ${P2_T:-100} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 256 --splits 0 4 8 --tokens 64 128
gpu_cleanup
