#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 1 at 3a87ff6 (T: df3ddde + notes/s35_pair_ticket.patch).
# Session 36 run 1: (1) the GPU tests of main (session 35's merged commit never ran them), (2) the pair
# reduction's ticket variant (notes/s35_pair_ticket.patch, build/snapT) -- its wgmma tests and bench_linear
# --format w4a16 at M = 100 / 128 side by side with main, two passes, (3) how many clusters of each size
# are resident at once (csrc/probe/cluster_occupancy.cu).
#   (device, carry build/snap build/snapT) cd build/snap && OUT=$OUT bash benchmarks/gpu_s36a.sh
: "${OUT:?}"
cd "$(dirname "$0")/.."
nvcc -O2 -std=c++17 -arch=sm_90a csrc/probe/cluster_occupancy.cu -o /tmp/cluster_occupancy && \
    /tmp/cluster_occupancy | tee "$OUT/cluster_occupancy.txt"
VARIANTS="M=. T=../snapT" TESTS='tests/gpu/test_w4a16_gemm_gpu.py -k wgmma' \
    BENCH="benchmarks/bench_linear.py --format w4a16 --ms 100 128" PASSES=2 bash benchmarks/gpu_side_by_side.sh
export QLINEAR_BUILD_DIR=/tmp/qb_M PYTHONPATH=$PWD
for t in "tests/gpu/test_w4a16_gemm_gpu.py -k wgmma" \
         "tests/gpu/test_w4a16_gpu.py -k auto or graph or backend_choice or wg"; do
    set -- $t
    f=$1; shift 2
    timeout 240 python -m pytest -q -p no:cacheprovider "$f" -k "$*" > "$OUT/main_$(basename "$f" .py).txt" 2>&1
    echo "main $f -k '$*': rc=$? | $(tail -n 1 "$OUT/main_$(basename "$f" .py).txt")"
    grep -E "^(FAILED|ERROR)" "$OUT/main_$(basename "$f" .py).txt" | head -n 5
done
