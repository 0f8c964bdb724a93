#!/usr/bin/env bash
# Issue 4 after the x-ahead dispatch: the FP8 CUDA GPU tests, the ragged-K accuracy probe, a last
# config check at M = 16 (2112x7168) and on 7168x16384, then bench_linear --format fp8-block (the
# acceptance file, interleaved timing).
#   OUT=/some/dir bash benchmarks/gpu_fp8final.sh   # ~300 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8final
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py
timeout 60 python benchmarks/probe_fp8_ragged.py --draws ${DRAWS:-100} 2>&1 | tee "$OUT/ragged.log" | grep -E "RAGGED|rror"
gpu_probe f16 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --gemv-codes "" --qmodes early,late \
    --pair-codes 11011114,11011115,11011113,11021108 --kernel-codes 10011112,10021108
gpu_probe fw 90 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 7168x16384 --gemv-codes "" --qmodes early --kernel-codes "" \
    --pair-codes 11011102,11011103,11011104,11011105,11011203,11011204
gpu_probe fw4 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 4 --shapes 7168x16384 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011103,10011104,10011204
timeout 280 python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 24
gpu_cleanup
