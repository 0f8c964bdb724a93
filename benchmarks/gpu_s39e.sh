#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 5 at 85392e7.
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh: the same steps.)
# Session 39 run 5: the paired few-row config (_CUDA_WGMMA_PAIRED: 128-row x 256-token CTAs over two K splits summed
# in pairs where N % 128 == 0 and the 64-row grid fills 7/8 of the SMs or more, also inside _CUDA_WGMMA_GAP). The
# wgmma and W4A16 dispatch GPU tests; the probe on the shapes it now takes against the 64-row config and
# dequantize + cuBLAS; 192-row CTAs on 2112x7168 at M = 1024; then bench_linear --format w4a16 on the final tree.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39e
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe paired_gap 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2816x7168,2560x7168 --ms 520 600 768 --layer sym-fp16 --rotate-x --tokens 999 --dequant \
    --wg-configs "256,1,3,0,64"
gpu_probe paired_1024 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2048x7168,1920x7168 --ms 800 1024 --layer asym-bf16 --rotate-x --tokens 999 --dequant \
    --wg-configs "256,1,3,0,64"
# 2112x7168 at M = 1024 in two full waves of 192-row x 128-token CTAs over three K splits (11 x 8 x 3 = 264)
gpu_probe r192 100 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 1024 --layer sym-fp16 --rotate-x --tokens 999 --wg-configs "256,1,3,0,64" "128,3,4,1,192"
gpu_bench_linear wg_tests 200
gpu_cleanup
