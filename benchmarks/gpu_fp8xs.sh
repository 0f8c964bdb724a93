#!/usr/bin/env bash
# FP8 decode GEMM with staged pre-quantized x (Q = 2, csrc/fp8_gemv.cuh XS): the kernel GPU tests,
# then probe_fp8_preq.py at M = 16 (and M = 12 on 2112x7168), then the pending W4A16 CUDA tests.
#   OUT=/some/dir bash benchmarks/gpu_fp8xs.sh   # ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8xs
timeout 150 python -m pytest -q -x -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py >"$OUT/fp8xs_tests.txt" 2>&1
echo "fp8 cuda tests rc=$? | $(tail -n 1 "$OUT/fp8xs_tests.txt")"
grep -E "^(FAILED|ERROR)|Error" "$OUT/fp8xs_tests.txt" | head -n 8
mkdir -p "$OUT/m16" "$OUT/m12"
timeout 120 python benchmarks/probe_fp8_preq.py --out "$OUT/m16" ${XS_ARGS:-} 2>&1 | tee "$OUT/fp8xs_m16.log" | grep -E "PREQ|rror"
timeout 60 python benchmarks/probe_fp8_preq.py --out "$OUT/m12" --m 12 --shapes 2112x7168 \
    --gemv-codes 1011116,2011116,2011216 --pair-codes "${XS_PAIR12:-1011116,2011116,2011216,2011114,2011112}" \
    2>&1 | tee "$OUT/fp8xs_m12.log" | grep -E "PREQ|rror"
timeout 90 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py >"$OUT/w4cuda_tests.txt" 2>&1
echo "w4a16 cuda tests rc=$? | $(tail -n 1 "$OUT/w4cuda_tests.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/w4cuda_tests.txt" | head -n 5
gpu_cleanup
