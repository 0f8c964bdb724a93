#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 3 at 4bc792b (through gpu_s36e.sh).
# Session 36 run 3 (first half): Nsight Compute of the TMA ring on 2112x7168 at one token tile (M = 8,
# 252444) and two (M = 16, 262434, the dispatch's code): warp-state and per-SASS-instruction stall samples,
# to find where the second token tile's ~1.5 us go (session 36 run 2: the time follows the consumers' work
# per CTA).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s36d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s36d
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: ${ncu:-missing} $("$ncu" --version 2>/dev/null | tail -n 1)"
for mc in "8 252444" "16 262434"; do
    set -- $mc
    name=m$1_$2
    timeout 150 "$ncu" --clock-control none -k regex:tma_gemv_kernel --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
        --section InstructionStats --section MemoryWorkloadAnalysis_Tables \
        -o "$OUT/$name" -f python benchmarks/probe_tma_once.py --m "$1" --code "$2" > "$OUT/${name}_run.txt" 2>&1
    echo "$name ncu rc=$? | $(grep -E 'relative error|rror' "$OUT/${name}_run.txt" | head -n 2 | tr '\n' ' ')"
    "$ncu" -i "$OUT/$name.ncu-rep" --page details > "$OUT/${name}_details.txt" 2>&1
    "$ncu" -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/${name}_sass.csv" 2>&1
    echo "$name sass rows: $(wc -l < "$OUT/${name}_sass.csv")"
    grep -E "Duration|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall|Executed Instructions " \
        "$OUT/${name}_details.txt" | cut -c1-140 | head -n 30
done
gzip -f "$OUT"/*_sass.csv
gpu_cleanup
