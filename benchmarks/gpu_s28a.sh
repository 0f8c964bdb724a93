#!/usr/bin/env bash
# Session 28 run 1: main (43b5804's kernels), s27-refill-last-wg and s27-persistent side by side
# (benchmarks/gpu_side_by_side.sh: GEMM GPU tests on the two branches, bench_linear --format w4a16 at
# M = 128 / 1024, two passes), then the persistent build's probe at 24576x1536 M = 1024 (plain 128-row
# grid against persistent CTAs, same tokens / stages). Run from main's snapshot, with the branches'
# snapshots next to it:
#   bash benchmarks/snapshot.sh && bash benchmarks/snapshot.sh s27-refill-last-wg build/snapR &&
#   bash benchmarks/snapshot.sh s27-persistent build/snapP
#   (device, carry build/snap build/snapR build/snapP) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28a.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:?}
VARIANTS="main=. refill=../snapR persist=../snapP" PASSES=2 \
  TESTS='tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or gemm or persistent"' \
  BENCH="benchmarks/bench_linear.py --format w4a16 --ms 128 1024" bash benchmarks/gpu_side_by_side.sh
W=/tmp/side_by_side
for pass in 1 2; do
  [ "$SECONDS" -gt "${PROBE_AFTER_LIMIT:-470}" ] && { echo "probeP$pass: skipped at ${SECONDS}s" | tee -a "$W/summary.txt"; continue; }
  (cd ../snapP && QLINEAR_BUILD_DIR=/tmp/qb_persist PYTHONPATH=$PWD timeout 90 python benchmarks/probe_w4a16_gemm.py \
      --family wgmma --tokens 999 --rotate-x --shapes 24576x1536 --ms 1024 \
      --wg-configs 256,1,3,0,128,0 256,1,3,0,128,1 \
      --out "$W/probeP$pass" > "$W/probeP$pass.log" 2>&1)
  grep -E "^GEMM M|rror|Traceback" "$W/probeP$pass.log" | sed "s/^/probeP$pass /" | cut -c1-120 | tee -a "$W/summary.txt"
done
cp "$W/summary.txt" "$OUT/summary.txt"; tar czf "$OUT/side_by_side.tgz" -C "$W" . 2>/dev/null
exit 0
