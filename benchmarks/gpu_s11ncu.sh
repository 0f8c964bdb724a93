#!/usr/bin/env bash
# Session 11: Nsight Compute of the wgmma W4A16 GEMM (probe_w4a16_gemm_ncu.py --wgmma), plus the
# tensor-pipe and stall metrics the default sections leave out.
#   OUT=/some/dir bash benchmarks/gpu_s11ncu.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11ncu
gpu_ncu wg_ncu ${NCU_T:-200} "w4_wgmma" benchmarks/probe_w4a16_gemm_ncu.py --wgmma
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 120 "$ncu" --clock-control none -k regex:w4_wgmma --metrics \
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.sum,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__inst_executed.sum,gpu__time_duration.sum,smsp__cycles_active.avg \
    python benchmarks/probe_w4a16_gemm_ncu.py --wgmma > "$OUT/wg_metrics.txt" 2>&1
echo "metrics rc=$?"
grep -E "w4_wgmma|gmma|stalled|inst_executed|duration|cycles_active|rror" "$OUT/wg_metrics.txt" | cut -c1-160 | head -80
gpu_cleanup
