#!/usr/bin/env bash
# Session 19 run 2: Nsight Compute of the wgmma W4A16 GEMM at M = 128 (probe_w4a16_gemm_ncu.py
# --wgmma-spread): where the 16.5 us of 2112x7168 with the spread reduction go (SM active cycles
# min / avg / max against the elapsed cycles, stalls), against the last-arrival sum and one split, and
# 24576x1536 (no split, 192 CTAs).   OUT=/some/dir bash benchmarks/gpu_s19ncu.sh   # ~90 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 240 "$ncu" --clock-control none -k regex:w4_wgmma --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --metrics sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,gpc__cycles_elapsed.max,dram__bytes_read.sum,lts__t_bytes.sum \
    python benchmarks/probe_w4a16_gemm_ncu.py --wgmma-spread > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|^case|Duration|Elapsed Cycles|SM Active Cycles|sm__cycles_active|gpc__cycles|dram__bytes|lts__t_bytes|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall|Grid Size|Registers Per|ERR|rror" \
    "$OUT/ncu.txt" | cut -c1-140 | head -120
gpu_cleanup
