#!/usr/bin/env bash
# Session 27 run 3 ran this on aafdbca (the wgmma GEMM there is the one at 43b5804).
# Nsight Compute on the dispatch's wgmma W4A16 GEMM where issue 5 misses (2112x7168 at M = 1024 and 128,
# 24576x1536 at M = 1024): throughput sections, warp-state statistics and the per-instruction stall
# samples (the source page with SASS text), summarized by benchmarks/ncu_stalls.py.
#   OUT=/some/dir bash benchmarks/gpu_s27b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s27b
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: ${ncu:-missing} $($ncu --version | tail -n 1)"
timeout 300 "$ncu" --clock-control none --target-processes all -k regex:"w4_wgmma" --launch-skip 0 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section SourceCounters --section MemoryWorkloadAnalysis --import-source no \
    --export "$OUT/wg" --force-overwrite \
    python benchmarks/probe_w4a16_gemm_ncu.py --wgmma-auto > "$OUT/wg_ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_].*\(|Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Registers Per|Grid Size|Tensor|ERR|rror" \
    "$OUT/wg_ncu.txt" | grep -v "^ *[A-Z][A-Z][A-Z] " | cut -c1-150 | head -80
timeout 120 "$ncu" --import "$OUT/wg.ncu-rep" --page source --csv --print-source sass > "$OUT/wg_source.csv" 2> "$OUT/wg_source.err"
echo "source page rc=$? $(wc -c < "$OUT/wg_source.csv") bytes; $(head -c 300 "$OUT/wg_source.err")"
python benchmarks/ncu_stalls.py "$OUT/wg_source.csv" --top 45 | cut -c1-200 | tee "$OUT/wg_stalls.txt" | head -230
gzip -f "$OUT/wg_source.csv"
gpu_cleanup
