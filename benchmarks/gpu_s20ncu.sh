#!/usr/bin/env bash
# RECORD ONLY: session 20 run 8 ran this on a snapshot of 8456fdd (the removed Q = 2 kernel).
# Nsight Compute on benchmarks/probe_fp8_ncu_cs.py: duration, DRAM / L2 throughput, issue activity
# and the warp stall breakdown per kernel (the second launch of each case is the one to read).
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s20ncu
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: ${ncu:-missing}"
timeout 200 "$ncu" --clock-control none --target-processes all -k regex:"fp8_gemv" \
    --metrics "gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python benchmarks/probe_fp8_ncu_cs.py > "$OUT/s20ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "fp8_gemv|gpu__time|dram__|lts__t_bytes|warps_active|issue_active|stalled_(long|short|barrier|membar|wait|math|lg_|mio|no_inst|branch|dispatch|drain|sleeping|selected|not_selected|imc|tex)" "$OUT/s20ncu.txt" \
    | grep -vE " 0(\.0+)?$|  0$" | cut -c1-140 | head -120
gpu_cleanup
