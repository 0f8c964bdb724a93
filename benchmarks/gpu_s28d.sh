#!/usr/bin/env bash
# RECORD ONLY: ran in session 28 (runs 2-3: 0d1bf66 / 9abb50b; run 4: c764e37; run 5: 26d9179); codes it names may no longer be compiled (csrc/fp8_tma.cuh kTmaKeys).
# Session 28 run 5: the FP8 TMA ring's pair split (T = 2 codes: a cluster of two CTAs per row tile, each
# half of K) on 2112x7168, with the dispatch taking 201042304 (quantizer trigger early) for M = 9 .. 16:
# build, the FP8 GPU tests, probe_fp8_preq.py at M = 16 and 9 (every pair key against the register
# kernel's 11011114, the dispatch before), then the issue-4 acceptance benchmark at this commit.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s28d
gpu_pytest tma 120 tests/gpu/test_fp8_tma_gpu.py
gpu_pytest fp8cuda 150 tests/gpu/test_fp8_cuda_gemv.py -k "auto or preq or graph or shapes"
gpu_pytest fp8 200 tests/gpu/test_fp8_gpu.py
PAIR=201042404,201042304,201042402,201042604,201041404,201041402
for m in 16 9; do
    gpu_probe "p_2112x7168_m$m" 100 "^PREQ M|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m $m \
        --gemv-codes "$PAIR,11011114" --pair-codes "$PAIR,211042304,11011114" --qmodes early,late --kernel-codes ""
done
timeout ${FP8_LIMIT:-240} python benchmarks/bench_linear.py --format fp8-block --out "$OUT/bench" 2>&1 | tee "$OUT/bench.log" | tail -n 40
