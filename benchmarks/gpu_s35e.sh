#!/usr/bin/env bash
# RECORD ONLY: ran in session 35 run 4 at 346ffe3 (A: d3c6c05); B's bench_linear is the W4A16 acceptance file.
# Session 35 run 4: the pair-reduction build with two dispatches side by side (A: main's few row, 128 x 128
# tiles with 7 spread splits at M = 65 .. 128; B: 64-row tiles x 4 splits summed in pairs), bench_linear
# --format w4a16 at M = 100 / 128, two passes alternating; then B's full acceptance benchmark and the GEMM
# probe on the symmetric layer bench_linear uses.
#   (device, carry build/snap build/snapA) cd build/snap && OUT=$OUT bash benchmarks/gpu_s35e.sh
: "${OUT:?}"
cd "$(dirname "$0")/.."
VARIANTS="A=../snapA B=." BENCH="benchmarks/bench_linear.py --format w4a16 --ms 100 128" PASSES=2 \
    bash benchmarks/gpu_side_by_side.sh
export QLINEAR_BUILD_DIR=/tmp/qb_B PYTHONPATH=$PWD
timeout 200 python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | grep -E "2112x7168|rror" | tail -n 12
timeout 120 python benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x --layer sym-fp16 \
    --shapes 2112x7168 --ms 100 128 --wg-configs 128,7,4,2,0 128,4,4,2,64 --out "$OUT/probe_sym" 2>&1 | grep -E "GEMM|rror"
