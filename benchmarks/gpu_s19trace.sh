#!/usr/bin/env bash
# Session 19 run 3 (DIAGNOSTIC build): per-CTA phase times of the wgmma W4A16 GEMM at M = 128
# (probe_w4a16_trace.py).   OUT=/some/dir bash benchmarks/gpu_s19trace.sh   # ~60 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe trace 150 "TRACE|rror" benchmarks/probe_w4a16_trace.py
gpu_cleanup
