#!/usr/bin/env bash
# RECORD ONLY: ran in session 45 run 5 at 8354567 (not adopted: benchmarks/results/session45/README.md).
# Session 45 run 5: 192-row CTAs over two K splits in pairs inside the few class's gap (2112x7168 at M = 513 .. 935,
# dequantize + cuBLAS there, 1.3-1.4x bf16): 128 tokens (11 x 6 x 2 = 132 CTAs at M = 641 .. 768) and 176 tokens
# (132 CTAs at M = 881 .. 1056) against the dispatch, at M = 600 / 700 / 768 / 800 / 900 on both layer kinds
# (probe_w4a16_gemm.py --rotate-x --dequant).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s45e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s45e
for layer in sym-fp16 asym-bf16; do
    gpu_probe "gap_$layer" 200 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
        --shapes 2112x7168 --ms 600 700 768 800 900 --layer "$layer" --rotate-x --tokens 999 --dequant \
        --wg-configs 128,2,4,3,192 176,2,4,3,192,4
done
gpu_cleanup
