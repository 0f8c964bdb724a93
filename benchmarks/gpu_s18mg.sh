#!/usr/bin/env bash
# Session 18 run 4 (needs probe_fp8_mgrow.py): where the FP8 Triton path's time grows with M on
# 7168x16384 (quantizer alone, GEMM alone on codes, pairs with the quantizer trigger late / early /
# 16 rows per quantizer program), M = 1 / 4 / 8 / 16. Triton only: no build.
#   OUT=/some/dir bash benchmarks/gpu_s18mg.sh   # ~120 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe mg 240 "MGROW|rror" benchmarks/probe_fp8_mgrow.py --ms 1 4 8 16 --shapes 7168x16384
gpu_cleanup
