#!/usr/bin/env bash
# RECORD ONLY: the kernel and probe_w4a16_ss.py it runs exist only at 960ccf7; check that out to rerun.
# Session 21 runs 5-6 (EXPERIMENT): the producer / consumer wgmma W4A16 GEMM (w4_wgmma_ss_kernel, QLINEAR_WG_SS=1):
# the wgmma GPU tests with it switched on, then probe_w4a16_ss.py (SS against RS, auto and bf16) per shape.
#   OUT=/some/dir bash benchmarks/gpu_s21c.sh   # ~4 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21c
export QLINEAR_WG_SS=2
gpu_pytest s21c_ss_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma" -x
unset QLINEAR_WG_SS
for sh in 2112x7168 24576x1536 7168x16384; do
    gpu_probe "ss_$sh" 90 "WGSS|rror" benchmarks/probe_w4a16_ss.py --shapes "$sh" --ms 128 1024
done
gpu_cleanup
