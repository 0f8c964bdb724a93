#!/usr/bin/env bash
# Session 14: is x rotated past L2 (bench_linear's inputs) what makes the wgmma GEMM read 6-7 us slower
# in the whole-layer benchmark than in probe_w4a16_gemm.py at M = 64 / 128 on 7168x16384? The probe
# with one L2-resident x, then with rotated x copies.
#   OUT=/some/dir bash benchmarks/gpu_s14rx.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14rx
gpu_probe hot 80 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 64 128 --tokens 64 128 --splits 0 \
    --shapes 7168x16384
gpu_probe rot 80 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 64 128 --tokens 64 128 --splits 0 \
    --shapes 7168x16384 --rotate-x
gpu_cleanup
