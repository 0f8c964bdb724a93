#!/usr/bin/env bash
# RECORD ONLY: ran in session 45 run 4 at 13149ae.
# Session 45 run 4: the wide config's M range below 1024 (qlinear/ops/w4a16.py _CUDA_WGMMA_WIDE takes 2112x7168 at
# M = 936 .. 1024, measured at 1024 only): the dispatch ("auto"), the wide config and the few row it replaced at
# M = 936 / 976 / 1024 on both layer kinds (probe_w4a16_gemm.py --rotate-x), dequantize + cuBLAS beside them.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s45d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s45d
for layer in sym-fp16 asym-bf16; do
    gpu_probe "range_$layer" 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
        --shapes 2112x7168 --ms 936 976 1024 --layer "$layer" --rotate-x --tokens 999 --dequant \
        --wg-configs 256,0,3,0,64 176,2,4,3,192,4
done
gpu_cleanup
