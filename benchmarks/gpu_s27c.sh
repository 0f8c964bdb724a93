#!/usr/bin/env bash
# RECORD ONLY: session 27 runs 4-5 ran this on 38e25c3 / 532a435 (both reverted after run 6).
# Session 27 runs 4-5: the wgmma W4A16 GEMM's scale / zero loads straight into their registers (nothing
# reads them until the next superblock; run 4: 16- and 32-bit loads predicated on the scale kind, run 5:
# one 4-byte word per scale) and its tile stores four 16-byte vectors per round (their shared-memory
# reads issued first). The wgmma / mma GEMM and W4A16 layer GPU tests; the
# issue-5 acceptance benchmark (bench_linear --format w4a16); Nsight Compute stall samples again.
#   OUT=/some/dir bash benchmarks/gpu_s27c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s27c
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
if grep -q "failed\|error" "$OUT/gemm_tests.txt"; then echo "GEMM tests failed: no acceptance run"; else
timeout ${W4_LIMIT:-220} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40; fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 150 "$ncu" --clock-control none --target-processes all -k regex:"w4_wgmma" \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --import-source no \
    --export "$OUT/wg" --force-overwrite python benchmarks/probe_w4a16_gemm_ncu.py --wgmma-auto > "$OUT/wg_ncu.txt" 2>&1
echo "ncu rc=$?"
timeout 100 "$ncu" --import "$OUT/wg.ncu-rep" --page source --csv --print-source sass > "$OUT/wg_source.csv" 2> "$OUT/wg_source.err"
python benchmarks/ncu_stalls.py "$OUT/wg_source.csv" --top 12 > "$OUT/wg_stalls.txt" 2>&1
grep -E "^== kernel|stall_(long_sb|wait|dispatch|barrier) " "$OUT/wg_stalls.txt" | head -40
gzip -f "$OUT/wg_source.csv"; rm -f "$OUT/wg.ncu-rep"
gpu_cleanup
