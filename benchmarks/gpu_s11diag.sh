#!/usr/bin/env bash
# Session 11: the wgmma W4A16 GEMM's diagnosis modes (probe_w4a16_wgmma_diag.py), one process each.
#   OUT=/some/dir bash benchmarks/gpu_s11diag.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11diag
for mode in ${DIAG_MODES:-0 1 2 4}; do
    QLINEAR_WG_DIAG=$mode timeout 120 python benchmarks/probe_w4a16_wgmma_diag.py 2>&1 | tee -a "$OUT/diag.log" | grep -E "DIAG|rror"
done
gpu_cleanup
