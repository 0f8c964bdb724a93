#!/usr/bin/env bash
# Nsight Compute on the FP8 block decode kernels of 2112x7168 (benchmarks/probe_fp8_ncu.py): speed of
# light, warp states, scheduler and memory tables per kernel; the second launch of each case is the
# one to read (the first is the warm-up).   OUT=/some/dir bash benchmarks/gpu_fp8ncu.sh   # ~60 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8ncu
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-missing}"
timeout 150 "$NCU" --clock-control none --target-processes all \
    -k regex:"fp8_gemv_kernel|fp8_block_gemm|per_token_group" \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section MemoryWorkloadAnalysis --section Occupancy \
    python benchmarks/probe_fp8_ncu.py > "$OUT/fp8ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|ERR|rror" "$OUT/fp8ncu.txt" | cut -c1-150 | head -150
gpu_cleanup
