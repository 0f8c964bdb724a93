#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 6 at c56d0fd (its Q = 2 code and table entry were removed after it).
# Session 31 run 6: grid-quantized x in the FP8 decode GEMM (launch code Q = 2: every warp of the grid
# quantizes one (token, k-block) group into the workspace, a grid barrier, then the pre-quantized kernel),
# in the dispatch for 2112x7168 at M = 9 .. 16 (12011114): the FP8 GEMV GPU tests (Q = 2 bit-identical to the
# quantizer + Q = 1 pair, graph replays, a chain of Q = 2 launches, refusals), probe_fp8_preq.py at M = 16
# against the pair it replaces (quantizer trigger early + 11011114), then the issue-4 acceptance benchmark.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31f
gpu_pytest gq_tests 150 tests/gpu/test_fp8_cuda_gemv.py -k "grid_quantized or trigger or pair_chain or auto"
gpu_probe gq16 90 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes 2112x7168,1536x7168 --m 16 \
    --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes 12011114,12011116
timeout ${FP8_LIMIT:-200} python benchmarks/bench_linear.py --format fp8-block --out "$OUT/bench" 2>&1 | \
    tee "$OUT/bench.log" | grep -E "M=(1|16|128) 2112|rror|Traceback" | head -n 20
gpu_cleanup
