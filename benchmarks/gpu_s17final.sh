#!/usr/bin/env bash
# Session 17, the code as it lands: the CUDA W4A16 decode GPU tests (incl. the symmetric layer's
# fold-free table configs), the fold tests and the W4A16 layer tests, then the issue-5 acceptance
# benchmark (bench_linear --format w4a16: whole layer, GPTQ symmetric layer, cold weights, against
# bf16 F.linear and tinygemm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s17final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17final
gpu_pytest w4_tests ${GT_LIMIT:-240} tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gpu.py
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
