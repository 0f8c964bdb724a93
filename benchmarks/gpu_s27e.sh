#!/usr/bin/env bash
# RECORD ONLY: session 27 run 7 ran this on be69683 (branch s27-refill-last-wg; main went back to 43b5804's kernel: the GPU test line of B was cut from the output and bench_linear was not run on it).
# Session 27 run 7: the wgmma W4A16 GEMM's refills issued by the first thread of the last warpgroup (B,
# this commit) against thread 0 (A = 43b5804's kernel; VARIANT_A: its snapshot folder), two builds side by
# side, each in its own process: the GEMM GPU tests on B, then probe_w4a16_gemm (GEMM only, x rotated) at
# M = 128 / 1024 on the three shapes, A, B, A, B.
#   OUT=/some/dir VARIANT_A=../snapA bash benchmarks/gpu_s27e.sh
source "$(dirname "$0")/_gpu_build.sh"
here=$PWD
declare -A dirs=([A]="${VARIANT_A:-../snapA}" [B]="$here")
for v in A B; do
    (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD python -c \
        "from qlinear.kernels import cuda_ext; cuda_ext.load()" > "$OUT/build_$v.log" 2>&1; echo "build $v rc=$?") &
done
wait
(QLINEAR_BUILD_DIR=/tmp/qb_B PYTHONPATH=$PWD timeout 60 python -m pytest -q -p no:cacheprovider \
    tests/gpu/test_w4a16_gemm_gpu.py -k "every_config or issue_shapes or spread or graph" 2>&1 | tail -n 1 | sed "s/^/tests B: /")
for pass in 1 2; do
    for v in A B; do
        (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD timeout 60 python benchmarks/probe_w4a16_gemm.py \
            --family wgmma --tokens 999 --rotate-x --shapes 2112x7168,24576x1536,7168x16384 --ms 128 1024 \
            --out "$OUT/$v$pass" 2>&1 | grep -E "^GEMM M" | grep -v "wgmma auto" | sed "s/^/$v$pass /" | cut -c1-90)
    done
done
