#!/usr/bin/env bash
# Session 21 run 7: the split-K GEMMs at M = 16 (the W4A16 M = 16 <= 1.3 x M = 1 miss): probe_w4a16_gemm.py with
# the mma.sync GEMM's 32-token codes and the wgmma GEMM's 64-token codes at 0 / 2 / 4 / 8 K splits against the
# dispatch (the register decode kernel) and bf16, symmetric fp16 layers, x rotated; and M = 12 / 9 on few.
#   OUT=/some/dir bash benchmarks/gpu_s21d.sh   # ~3 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21d
for sh in 2112x7168 24576x1536 7168x16384; do
    gpu_probe "gemm16_$sh" 120 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family both --tokens 64 --ms 16 \
        --splits 0 2 4 8 --layer sym-fp16 --rotate-x --shapes "$sh"
done
gpu_cleanup
