#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 3 at 5a3bc9a (branch s34-streamk).
# Session 34 run 3: the stream-K grid (reduce 3) with one main loop for both segments (no serialized wgmmas):
# its GPU tests and the wgmma GEMM tests it touches; 2112x7168 at M = 256 .. 1024 against the dispatch's
# 64-row CTAs and bf16 F.linear; Nsight Compute of the same kernels.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34c
gpu_pytest wg_sk 300 tests/gpu/test_w4a16_gemm_gpu.py -k "stream_k or graph_replays or every_config or spread or issue_shapes"
gpu_probe sk 240 "GEMM|rror|Traceback|skipped" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168 --ms 256 512 768 1024 --wg-configs 256,0,3,3,128,1 256,0,3,0,64
gpu_ncu ncu_sk 200 "w4_wgmma_kernel" benchmarks/probe_w4a16_gemm_ncu.py --wgmma-sk
gpu_cleanup
