#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 1 at 866c8b0 (the multicast codes need notes/s38_x_multicast.patch).
# Session 38 run 1: x multicast over pairs of 64-row wgmma CTAs (code 101323, mcast = 1), the few row's
# dispatch from M = 513 on. The multicast test first (a cluster protocol bug would hang or differ there), the
# wgmma probe on 2112x7168 at M = 600 / 768 / 1024, both layers, the plain unsplit row against multicast, then
# the rest of the wgmma tests and bench_linear --format w4a16 (the acceptance file if multicast wins).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38a
gpu_pytest mc_test 90 tests/gpu/test_w4a16_gemm_gpu.py -k "x_multicast or wgmma_refusals"
grep -q " passed" "$OUT/mc_test.txt" && ! grep -qE "failed|error" "$OUT/mc_test.txt" || { echo "multicast test not green: stop"; gpu_cleanup; exit 0; }
gpu_probe wg_sym 120 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 600 768 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "256,1,3,0,64,0,1"
gpu_probe wg_asym 120 "GEMM BEST|wg |rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 1024 --layer asym-bf16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "256,1,3,0,64,0,1"
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma and not x_multicast and not wgmma_refusals"
mkdir -p "$DEST/linear"
timeout 200 python benchmarks/bench_linear.py --format w4a16 --out "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" | tail -n 30
gpu_cleanup
