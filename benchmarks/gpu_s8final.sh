#!/usr/bin/env bash
# Session 8, final run: bench_linear --format fp8-block (issue-4 acceptance file after the 24576x1536
# M <= 16 config), the W4A16 GEMM GPU tests (with the auto dispatch of cuda_gemm), and Nsight Compute
# of the W4A16 GEMM kernel (benchmarks/probe_w4a16_gemm_ncu.py).   OUT=/some/dir bash benchmarks/gpu_s8final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s8final
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_gpu.py -k "gemm or backend_choice" >"$OUT/w4gemm_tests.txt" 2>&1
echo "w4a16 gemm + dispatch tests rc=$? | $(tail -n 1 "$OUT/w4gemm_tests.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/w4gemm_tests.txt" | head -n 6
timeout 200 python benchmarks/bench_linear.py --format fp8-block --ms 1 4 16 128 1024 4096 --out "$OUT" 2>&1 | tee "$OUT/linear_fp8.log" | grep -E "qlinear|rror"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 120 "$NCU" --clock-control none --target-processes all -k regex:"w4_gemm_kernel" \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section MemoryWorkloadAnalysis --section Occupancy \
    python benchmarks/probe_w4a16_gemm_ncu.py > "$OUT/w4gemm_ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\\(|Duration|DRAM Throughput|L2 Cache Throughput|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Stall" "$OUT/w4gemm_ncu.txt" | cut -c1-140 | head -80
gpu_cleanup
