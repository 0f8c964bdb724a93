#!/usr/bin/env bash
# Session 39 run 7: the final tree (the few row at M <= 128 on 64-row warpgroups that take alternate superblocks,
# for both layer kinds). The wgmma and W4A16 dispatch GPU tests; the dispatch at M = 64 / 100 / 128 on 2112x7168
# for both layer kinds (no bench_linear: the device time left after run 6 does not hold it).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39h.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39h
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
for layer in sym-fp16 asym-bf16; do
  gpu_probe "final_$layer" 100 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes 2112x7168 --ms 64 100 128 --layer "$layer" --rotate-x --tokens 999 --wg-configs "128,4,4,3,64"
done
gpu_cleanup
