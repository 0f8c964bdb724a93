#!/usr/bin/env bash
# Session 12: the wgmma W4A16 GEMM with 2-CTA clusters sharing x (TMA multicast; cluster digit of
# w4a16_wgmma_configs): its GPU tests, then probe_w4a16_gemm.py (wgmma family, cluster 1 vs 2, auto
# splits) at M = 128 (128 tokens) and M = 512 / 1024 (128 and 256 tokens) on the issue shapes.
#   OUT=/some/dir bash benchmarks/gpu_s12mc.sh
# Ran once (session 12 run 4, 25c3c7e); the cluster instances were slower everywhere and were removed
# after it, so this script needs that commit.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12mc
gpu_pytest wg_tests ${WG_T:-200} -x tests/gpu/test_w4a16_gemm_gpu.py -k "cuda_wgmma or cluster"
gpu_probe m128 ${P1_T:-120} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 --splits 0 --tokens 128
gpu_probe mbig ${P2_T:-150} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 512 1024 --splits 0 --tokens 128 256
gpu_cleanup
