#!/usr/bin/env bash
# Session 12: the wgmma W4A16 GEMM's K-split reduction with 16-byte partial stores / loads and the
# next split's loads issued before this split's adds: the GEMM GPU tests, then probe_w4a16_gemm.py
# over K splits at M = 128 (128 tokens) and M = 1024 (256 tokens) against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s12red.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12red
gpu_pytest wg_tests ${WG_T:-200} -x tests/gpu/test_w4a16_gemm_gpu.py -k "cuda_wgmma"
gpu_probe r128 ${P1_T:-150} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 --splits 0 1 2 4 7 8 14 --tokens 128
gpu_probe r1024 ${P2_T:-150} "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 1024 512 --splits 0 1 2 3 4 --tokens 256
gpu_cleanup
