#!/usr/bin/env bash
# FP8 decode, the bulk variant (B = 1: weights and x staged in shared memory by bulk copies; issue 4):
# its GPU tests, then probe_fp8_preq.py against the committed paths on 2112x7168 (M = 4 / 8 / 16),
# the MLA halves at M = 4 (the merged / separate ratio) and 7168x16384 at M = 16; then the GPU tests
# of session 8's untested W4A16 refactors and the rest of the FP8 CUDA tests.
#   OUT=/some/dir bash benchmarks/gpu_fp8bulk.sh   # ~300 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8bulk
probe() {  # probe NAME LIMIT ARGS...
    local name=$1 limit=$2; shift 2
    mkdir -p "$OUT/$name"
    timeout "$limit" python benchmarks/probe_fp8_preq.py --out "$OUT/$name" "$@" 2>&1 | tee "$OUT/$name.log" | grep -E "PREQ|rror"
}
gpu_pytest bulk_tests 150 -x tests/gpu/test_fp8_cuda_gemv.py -k "bulk"
probe b16 100 --m 16 --shapes 2112x7168 --kernel-codes "" \
    --gemv-codes ${B16_GEMV:-1011114,11011114,11011116,11011814,11011414,11011212,11011910} \
    --pair-codes ${B16_PAIR:-1011114,11011114,11011116,11011814,11011414} --qmodes late,early
probe b8 100 --m 8 --shapes 2112x7168 --gemv-codes "" --pair-codes 11011116,11011114 --qmodes early \
    --kernel-codes ${B8_KERNEL:-11116,10011116,10011816,10011416,10011114,10011912}
probe b4 120 --m 4 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes ${B4_KERNEL:-11116,41108,10011116,10011816,10011416,10041108,10041808,10021108}
probe bw 100 --m 16 --shapes 7168x16384 --gemv-codes "" --qmodes late,early --kernel-codes "" \
    --pair-codes ${BW_PAIR:-11000000,11041108,11041116,11081108,11081816,11161108}
gpu_pytest w4_refactor_tests 120 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gemm_gpu.py
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py -k "not bulk"
gpu_cleanup
