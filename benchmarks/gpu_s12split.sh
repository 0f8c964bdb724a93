#!/usr/bin/env bash
# Session 12: where the wgmma W4A16 GEMM's time goes with K splits (2112x7168, M = 128, 128 tokens,
# 1 / 2 / 4 / 7 splits): per-kernel duration against the SMs' active cycles (mean and max), warps
# launched, DRAM and L2 bytes.
#   OUT=/some/dir bash benchmarks/gpu_s12split.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12split
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout ${NCU_T:-150} "$ncu" --clock-control none -k regex:w4_wgmma --metrics \
gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__warps_launched.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio \
    python benchmarks/probe_w4a16_gemm_ncu.py --wgmma-splits > "$OUT/split_metrics.txt" 2>&1
echo "metrics rc=$?"
grep -E "w4_wgmma|duration|cycles|inst_executed|bytes|launched|stalled|rror" "$OUT/split_metrics.txt" | cut -c1-150 | head -120
gpu_cleanup
