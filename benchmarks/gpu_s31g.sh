#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 7 at dca82da.
# Session 31 run 7: the norm-quant early-trigger dispatch at two rows through the auto path: the FP8-on-codes
# layer graph test at M = 16 / 2 / 1, then the chain at M = 2 (bench_fp8_prequant: "norm-quant + linear on
# codes" is the auto dispatch).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31g
gpu_pytest fp8q_tests 100 tests/gpu/test_fp8_quantized_gpu.py
gpu_probe nq_chain 60 "PREQ|rror|Traceback" benchmarks/bench_fp8_prequant.py --shapes 2112x7168 --ms 2 \
    --nq-backends cuda triton-early
gpu_cleanup
