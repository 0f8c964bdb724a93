#!/usr/bin/env bash
# Session 26 run 1: the TMA ring back to 128-column x boxes (run 6's 144 regressed) and the FP8 GEMV
# without the cluster split (both reverted to 06410fe's code): the TMA, dispatch-table, layer and FP8
# GEMV GPU tests; the dequantize windows (w4a16_dequantize rows / cols / out) through the GPU tests;
# probe_w4_overlap (can the large-M dequantize hide behind cuBLAS: row / column chunks, side stream);
# then the issue-5 acceptance benchmark (bench_linear --format w4a16).
#   OUT=/some/dir bash benchmarks/gpu_s26a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s26a
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or dequantize"
gpu_pytest fp8_gemv_tests 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_probe overlap 200 "W4O|rror|Traceback" benchmarks/probe_w4_overlap.py --ms 1024 4096
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
