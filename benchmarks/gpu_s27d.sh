#!/usr/bin/env bash
# RECORD ONLY: session 27 run 6 ran this on d86f99c (variant C), with snapA = 43b5804's csrc/w4a16_wgmma.cuh and snapB = that plus the four-vector tile stores; C and the stores were reverted after it (no gain).
# Session 27 run 6: three builds of the wgmma W4A16 GEMM side by side, each in its own process (same
# machine, minutes apart): A = 43b5804 (session 26), B = A with the tile stores of four vectors per round
# (192-row CTAs: as A), C = this commit (B's stores, scales loaded as 4-byte words into per-step register
# sets, zero points predicated). VARIANT_A / VARIANT_B: snapshot folders of A and B (csrc differs).
# GEMM GPU tests on B and C; bench_linear --format w4a16 on every M for B and C, M = 64 / 128 / 1024 for
# A; then M = 128 / 1024 again for A, B, C.
#   OUT=/some/dir VARIANT_A=../snapA VARIANT_B=../snapB bash benchmarks/gpu_s27d.sh
source "$(dirname "$0")/_gpu_build.sh"
here=$PWD
declare -A dirs=([A]="${VARIANT_A:-../snapA}" [B]="${VARIANT_B:-../snapB}" [C]="$here")
for v in A B C; do
    (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD python -c \
        "from qlinear.kernels import cuda_ext; cuda_ext.load()" > "$OUT/build_$v.log" 2>&1; echo "build $v rc=$?") &
done
wait
run_v() {  # run_v VARIANT LIMIT ARGS...: bench_linear of that build into $OUT/VARIANT[_suffix]
    local v=$1 limit=$2 sub=$3; shift 3
    mkdir -p "$OUT/$sub"
    (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD timeout "$limit" \
        python benchmarks/bench_linear.py --format w4a16 --out "$OUT/$sub" "$@" 2>&1 | grep -E "qlinear w4a16" | \
        sed "s/^/$sub /" | cut -c1-150)
}
for v in B C; do
    (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD timeout 100 python -m pytest -q -p no:cacheprovider \
        tests/gpu/test_w4a16_gemm_gpu.py 2>&1 | tail -n 1 | sed "s/^/tests $v: /")
done
run_v C 120 C
run_v B 120 B
run_v A 60 A --ms 64 128 1024
for v in A B C; do run_v $v 50 ${v}2 --ms 128 1024; done
