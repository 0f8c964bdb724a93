#!/usr/bin/env bash
# Session 16: the W4A16 register decode kernel's K split. The CUDA W4A16 GPU tests (decode kernels
# incl. the new split tests, fold, and the two GEMMs whose split-K arrival helper moved into
# w4a16_gemv.cuh), then bench_w4reg.py --split on the realistic layer (sym-fp16): the split configs
# against the committed _CUDA_REG_AUTO entries, alternated, at M = $REG_MS.
#   OUT=/some/dir REG_MS="1 16" bash benchmarks/gpu_s16split.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s16split
# shellcheck disable=SC2086
gpu_pytest w4_tests ${GT_LIMIT:-220} ${W4_TESTS:-tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py \
    tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py}
# shellcheck disable=SC2086
timeout ${REG_LIMIT:-200} python benchmarks/bench_w4reg.py --layer sym-fp16 --split --ms ${REG_MS:-1 16} \
    --out "$OUT/w4reg" > "$OUT/w4reg_bench.txt" 2>&1
echo "w4reg rc=$?"
grep -E "BEST|CLASS|SET|skipped|Error" "$OUT/w4reg_bench.txt" | head -40
gpu_cleanup
