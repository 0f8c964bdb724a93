#!/usr/bin/env bash
# Session 19 run 10: the spread sum with up to 8 splits x 3 float4 per thread in one L2 round trip
# (was 4 x 4: two round trips at 7 splits). The GEMM GPU tests, then the wgmma GEMM where it sums spread:
# 2112x7168 at M = 64 / 128 and 7168x16384 at M = 64 / 128, against run 9 (same method).
#   OUT=/some/dir bash benchmarks/gpu_s19sum.sh   # ~80 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe few 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 --shapes 2112x7168
gpu_probe many 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 --shapes 7168x16384
gpu_cleanup
