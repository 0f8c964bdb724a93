#!/usr/bin/env bash
# RECORD ONLY: ran in session 35 run 1 at 042c78a (snapTrace 6f2b551); the trace build is notes/s35_wg_trace.patch; s35-own's own-share epilogue lost and is not on main.
# Session 35 run 1: two builds in one device run. $SNAPT (branch s35-trace) runs the per-CTA phase probe
# (benchmarks/probe_wg_trace.py: 16 stamp slots per CTA, the split tile's epilogue in parts) and times the
# spread sum's variants against each other (1: the CTA's own share stays in shared memory; 2: float4
# partials shared in units of 4 values x one warp; 3: both). This folder (branch s35-own: variant 1 as code)
# runs the wgmma GEMM tests, the W4A16 layer's auto / graph tests and the acceptance benchmark.
#   (device, carry build/snap build/snapT) cd build/snap && OUT=$OUT SNAPT=../snapT bash benchmarks/gpu_s35b.sh
: "${OUT:?}" "${SNAPT:?}"
SNAPT=$(cd "$SNAPT" && pwd)
(cd "$SNAPT" && QLINEAR_BUILD_DIR=/tmp/qb_T PYTHONPATH=$SNAPT python -c \
    "from qlinear.kernels import cuda_ext; cuda_ext.load()" > /tmp/build_T.log 2>&1; echo "build T rc=$?" >> /tmp/build_T.log) &
bt=$!
export QLINEAR_BUILD_DIR=/tmp/qb_own
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s35b
wait $bt
cp /tmp/build_T.log "$OUT/"
tail -n 2 "$OUT/build_T.log"
(cd "$SNAPT" && QLINEAR_BUILD_DIR=/tmp/qb_T PYTHONPATH=$SNAPT timeout 200 python benchmarks/probe_wg_trace.py \
    --variants 0 1 2 3) 2>&1 | tee "$OUT/probe_wg_trace.txt" | grep -E "TRACE|TIME|bits|Error|error" | head -60
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or wg"
timeout 240 python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
