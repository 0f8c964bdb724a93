#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 5 at 15b53d6.
# Session 30 run 5: run 4 again with the block-per-row kernel reading its weights from global memory (no shared-memory stage, which took 5.3 us at K 7168 and failed to launch at 16384); rms_norm_quant_fp8's block-per-row CUDA kernel (nq_cta_kernel, the CUDA default for
# 16-bit rows longer than 4096 and path 3; launch_dependents at its start): the norm-quant GPU tests,
# probe_norm_quant_decode (cuda vs triton vs rms_norm alone, M 1 .. 1024, K 1536 / 7168 / 16384), and the
# norm -> FP8 GEMM chains with each norm-quant backend (bench_fp8_prequant --nq-backends).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30e
gpu_pytest normquant 150 tests/gpu/test_norm_quant_cuda_gpu.py
gpu_probe nq_decode 150 "NQ M|rror|Traceback" benchmarks/probe_norm_quant_decode.py --ms 1 16 64 256 1024 \
    --ks 7168 16384
timeout 150 python benchmarks/bench_fp8_prequant.py --out "$OUT/prequant_bench" --ms 1 16 \
    --shapes 2112x7168 --nq-backends cuda triton 2>&1 | tee "$OUT/prequant_bench.log" | grep -v "^$" | tail -n 40
gpu_cleanup
