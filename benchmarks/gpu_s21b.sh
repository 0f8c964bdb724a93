#!/usr/bin/env bash
# Session 21 runs 2-3 (DIAGNOSTIC, needs the commit that adds GemmParams.diag): what binds the wgmma W4A16
# GEMM's main loop at M = 128 / 1024: probe_w4a16_wgdiag.py (refills without x / weights / both).
#   OUT=/some/dir bash benchmarks/gpu_s21b.sh   # ~3 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21b
gpu_probe wgdiag 300 "WGDIAG|rror" benchmarks/probe_w4a16_wgdiag.py --ms 128 1024
gpu_cleanup
