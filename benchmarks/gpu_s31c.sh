#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 3 at 896234f.
# Session 31 run 3: the W4A16 dispatch with the producer warpgroup (short / many classes, 128 rows x 256
# tokens from M = 257 / 129 to 1024): the wgmma GEMM, dispatch-table and layer GPU tests, the issue-5
# acceptance benchmark (bench_linear --format w4a16), then session 30's open measurement: Triton's
# norm-quant with a PDL trigger ahead of the FP8 GEMM (bench_fp8_prequant --nq-backends).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31c
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
timeout ${W4_LIMIT:-260} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_probe nq_chain 90 "PREQ|rror|Traceback" benchmarks/bench_fp8_prequant.py --shapes 2112x7168 \
    --ms 1 16 --nq-backends cuda triton triton-first triton-early
gpu_cleanup
