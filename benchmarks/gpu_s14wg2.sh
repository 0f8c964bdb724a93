#!/usr/bin/env bash
# Session 14: the wgmma W4A16 GEMM's 64-token tile around the dispatch bounds (run 6 found it 27-32 %
# faster than the mma.sync GEMM at M = 40 / 64 on 7168x16384): M = 32 / 48 on 7168x16384 against
# the mma.sync GEMM, and M = 128 on the three shapes with K splits 0 (auto) / 1 / 2 / 4.
#   OUT=/some/dir bash benchmarks/gpu_s14wg2.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14wg2
gpu_probe many 150 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family both --ms 32 48 --tokens 64 --splits 0 \
    --shapes 7168x16384
gpu_probe m128 200 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 --tokens 64 128 --splits 0 1 2 4
gpu_cleanup
