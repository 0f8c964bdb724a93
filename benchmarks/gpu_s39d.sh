#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 4 at eb95ca4 (the mixed grid: notes/s39_mixed_grid.patch).
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh: the same steps.)
# Session 39 run 4: the mixed grid (csrc/w4a16_wgmma.cuh w4_wgmma_mixed_kernel: 2112 = 16 x 128 paired rows + 64 rows
# in 64-row CTAs, 132 CTAs at M = 1024) and the paired few-row config at M = 769 .. 1024 (_CUDA_WGMMA_PAIRED).
# The wgmma and W4A16 dispatch GPU tests; the probe on 2112x7168 (sym and asym layers) and 2048x7168 against the
# 64-row config and dequantize + cuBLAS; then bench_linear --format w4a16 if the tests passed.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39d
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
for layer in sym-fp16 asym-bf16; do
  gpu_probe "mixed_$layer" 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes 2112x7168 --ms 960 1024 --layer "$layer" --rotate-x --tokens 999 --dequant \
      --wg-configs "256,1,3,0,64" "256,2,3,3,128"
done
gpu_probe paired2048 100 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2048x7168 --ms 1024 --layer sym-fp16 --rotate-x --tokens 999 --wg-configs "256,1,3,0,64"
gpu_bench_linear wg_tests 200
gpu_cleanup
