#!/usr/bin/env bash
# Nsight Compute on the W4A16 CUDA decode kernels (benchmarks/probe_w4a16_ncu.py): speed of
# light, warp states, scheduler and memory tables per kernel; the second launch of each case is the
# one to read (the first is the warm-up).   OUT=/some/dir bash benchmarks/gpu_w4ncu.sh   # ~60 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4ncu
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-missing}"
timeout 150 "$NCU" --clock-control none --target-processes all \
    -k regex:"reg_gemv|ring_gemv|bulk_gemv|mma_gemv" \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section MemoryWorkloadAnalysis --section Occupancy \
    python benchmarks/probe_w4a16_ncu.py > "$OUT/w4ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|ERR|rror" "$OUT/w4ncu.txt" | cut -c1-150 | head -150
gpu_cleanup
