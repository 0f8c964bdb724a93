#!/usr/bin/env bash
# Session 18 run 10. Needs 6d27ea4 (SWAP_AB_ROW_MAJOR_SCALES and probe_fp8_wide --set rm, reverted
# after this run: no gain on the table's entries). The swap-AB table entries of the wide shapes with
# column- and row-major activation scales, whole op, at M = 1 / 2 / 4 / 8 / 16 (probe_fp8_wide.py
# --set rm); then the swap-AB GPU tests. Triton only.
#   OUT=/some/dir bash benchmarks/gpu_s18rm.sh   # ~150 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe rm 200 "WIDE|rror" benchmarks/probe_fp8_wide.py --set rm --ms 1 2 4 8 16
gpu_pytest swapab_tests 120 tests/gpu/test_fp8_swapab_gpu.py
gpu_cleanup
