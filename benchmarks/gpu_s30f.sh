#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 6 at abb3c9a.
# Session 30 run 6: the block-per-row norm-quant kernel with each thread's weights loaded once, before
# the first row (run 5: loaded after each row's sum, 3.2 us at K 7168 M 1): the norm-quant GPU tests,
# probe_norm_quant_decode at K 7168 / 16384, the norm -> FP8 GEMM chains on 2112x7168 with each backend;
# and the TMA ring / dispatch-table tests with the SW = 2 neighbours removed from the compiled list.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30f
gpu_pytest normquant 150 tests/gpu/test_norm_quant_cuda_gpu.py
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_probe nq_decode 120 "NQ M|rror|Traceback" benchmarks/probe_norm_quant_decode.py --ms 1 16 64 256 1024 \
    --ks 7168 16384
timeout 120 python benchmarks/bench_fp8_prequant.py --out "$OUT/prequant_bench" --ms 1 16 \
    --shapes 2112x7168 --nq-backends cuda triton 2>&1 | tee "$OUT/prequant_bench.log" | grep -v "^$" | tail -n 40
gpu_cleanup
