#!/usr/bin/env bash
# Session 19 run 4: the wgmma W4A16 GEMM's output staged through shared memory and stored as 16-byte
# vectors (run 3's stamps: ~4 us per CTA for the one-value-at-a-time stores), and the spread
# reduction's departure atomic overlapped with its sum. The GEMM GPU tests, then probe_w4a16_gemm.py
# on the three shapes at the M where the wgmma GEMM runs, against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s19epi.sh   # ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe few 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 128 96 --shapes 2112x7168 \
    --wg-configs 128,7,4,1 128,6,4,2 64,3,8,2
gpu_probe short 150 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 128 256 512 1024 --shapes 24576x1536
gpu_probe many 150 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 1024 --shapes 7168x16384
gpu_cleanup
