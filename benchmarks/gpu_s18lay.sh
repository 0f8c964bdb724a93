#!/usr/bin/env bash
# Session 18 run 9: does the activation-scale layout the FP8 Triton GEMMs are specialized on explain
# their M = 16 slowdown on 7168x16384? (run 8: the M = 1 and M = 16 binaries differ, 72 vs 80
# registers for the split kernel, because the column-major scales' K stride is M.)
# probe_fp8_mgrow.py --layouts at M = 1 / 16.  OUT=/some/dir bash benchmarks/gpu_s18lay.sh  # ~60 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe lay 150 "MGROW|rror" benchmarks/probe_fp8_mgrow.py --layouts --ms 1 16 --shapes 7168x16384
gpu_cleanup
