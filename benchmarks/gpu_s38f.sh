#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 6 at 94a645f.
# Session 38 run 6: partial token tiles of the wgmma GEMM stored by the threads instead of one TMA box, and
# 2112x7168 M = 513 .. 960 sent to dequantize + cuBLAS (_CUDA_WGMMA_GAP, run 5). The wgmma and W4A16 dispatch GPU
# tests, the probe around the gap's upper bound and at partial tiles on every shape, then bench_linear --format
# w4a16 (the issue-5 acceptance file).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38f
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe few_m 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 520 600 900 960 992 1000 1024 --layer sym-fp16 --rotate-x --tokens 999 --dequant
gpu_probe other_m 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 24576x1536,7168x16384 --ms 600 768 --layer sym-fp16 --rotate-x --tokens 999 --dequant
mkdir -p "$DEST/linear"
timeout 200 python benchmarks/bench_linear.py --format w4a16 --out "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" | tail -n 30
gpu_cleanup
