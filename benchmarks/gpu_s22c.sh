#!/usr/bin/env bash
# Session 22 run 6: Nsight Compute stall reasons and pipe utilization of the W4A16 TMA ring codes at
# 7168x16384 M = 1 (probe_w4tma_ncu.py), the register kernel last.
#   OUT=/some/dir bash benchmarks/gpu_s22c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22c
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 240 "$ncu" --clock-control none --target-processes all -k regex:"tma_gemv|reg_gemv" -c ${S22C_COUNT:-6} \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --print-details all \
    python benchmarks/probe_w4tma_ncu.py --codes ${S22C_CODES:-22844 22848} > "$OUT/s22c_ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|Stall|Pipe|pipe|Issued Warp|Warp Cycles Per Issued|Executed Ipc|rror" "$OUT/s22c_ncu.txt" | grep -v "^ *----" | cut -c1-120 | head -200
gpu_cleanup
