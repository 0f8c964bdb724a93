#!/usr/bin/env bash
# Session 14: W4A16 at M = 33 .. 64, where the acceptance run (session 14 run 5) had 7168x16384 M = 64
# on the mma.sync GEMM at 86.8 us, slower than M = 128 on the wgmma GEMM (76.9): both CUDA GEMM families
# (wgmma token tiles 64 / 128, every compiled mma.sync config) against the committed dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s14wg.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14wg
gpu_probe wg 240 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family both --ms 40 64 --tokens 64 128 --splits 0
gpu_cleanup
