#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 7 at a283b0d.
# Session 38 run 7: a last token tile that ends past M computes the tile ending at M (x boxes never past M) and
# stores only its own tokens. The wgmma GPU tests (partial tiles in every reduction and store path), then the
# probe at partial tiles: 2112x7168 with the few row's 64-row config against dequantize + cuBLAS, and the
# dispatch on 24576x1536 / 7168x16384 at M = 600 / 768 (run 6: 114 / 106 and 324 / 313 us).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38g
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe few_m 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 520 600 768 900 --layer sym-fp16 --rotate-x --tokens 999 --dequant \
    --wg-configs "256,0,3,0,64"
gpu_probe other_m 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 24576x1536,7168x16384 --ms 600 768 --layer sym-fp16 --rotate-x --tokens 999 --dequant
gpu_cleanup
