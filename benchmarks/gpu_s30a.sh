#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 1 at 2209d0c.
# Session 30 run 1: swizzled x in one 3-D TMA box per superblock (SW = 2 codes 262434 / 224444, twins of
# 62434 / 24444): the TMA ring tests (every code, the SW = 2 codes bit-equal to their twins, K % 64 != 0
# falling back to the twin, graph + PDL), then bench_w4tma against the dispatch's 62434 (2112x7168) and
# 124444 (7168x16384) at two token tiles; and the GPU tests session 29 left unrun at its HEAD (norm-quant
# CUDA dispatch, FP8 on pre-quantized x, the FP8 register and TMA GEMVs).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30a
gpu_pytest tma_tests 200 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 120 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --reps 9 --codes 62434 262434 124444 224444
gpu_probe tma_many 120 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many --ms 9 16 \
    --reps 9 --codes 124444 224444 62434 262434
gpu_pytest normquant 120 tests/gpu/test_norm_quant_cuda_gpu.py
gpu_pytest prequant 100 tests/gpu/test_fp8_quantized_gpu.py
gpu_pytest fp8_gemv 150 tests/gpu/test_fp8_cuda_gemv.py tests/gpu/test_fp8_tma_gpu.py
gpu_cleanup
