#!/usr/bin/env bash
# RECORD ONLY: the kernel variants and probe_w4a16_wgdiag.py it runs exist only at 6646b9e; check that out to rerun.
# Session 21 runs 2-4 (DIAGNOSTIC, needs the commit that adds GemmParams.diag): what binds the wgmma
# W4A16 GEMM's main loop: probe_w4a16_wgdiag.py (refills without x / weights, no dequantization, no
# wgmma). The no-dequant / no-wgmma instances exist for the 128-token, 4-stage code only (run 3 hung on
# M = 1024, whose auto config is 256 tokens: there only the refill bits are timed). One process per
# shape and M, each under its own timeout.
#   OUT=/some/dir bash benchmarks/gpu_s21b.sh   # ~2 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21b
for sh in 24576x1536 7168x16384 2112x7168; do
    gpu_probe "wgdiag128_$sh" 60 "WGDIAG|rror" benchmarks/probe_w4a16_wgdiag.py --ms 128 --shapes "$sh"
done
for sh in 24576x1536 2112x7168; do
    gpu_probe "wgdiag1024_$sh" 60 "WGDIAG|rror" benchmarks/probe_w4a16_wgdiag.py --ms 1024 --shapes "$sh" --diags 0,1,2,3
done
gpu_cleanup
