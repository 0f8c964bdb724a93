#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 1 at 3423dd5 (branch s34-streamk; its stream-K kernel had serialized wgmmas: ptxas C7512).
# Session 34 run 1: the wgmma W4A16 GEMM's stream-K grid (reduce 3, code 20323: 128 rows x 256 tokens with the
# producer warpgroup, one CTA per SM over all tiles' superblocks): its GPU tests and the wgmma GEMM tests it
# touches; then 2112x7168 at M = 256 .. 1024 against the dispatch (64-row CTAs) and bf16 F.linear.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34a
gpu_pytest wg_sk 300 tests/gpu/test_w4a16_gemm_gpu.py -k "stream_k or graph_replays or every_config or spread or issue_shapes"
gpu_probe sk 300 "GEMM|rror|Traceback|skipped" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168 --ms 256 512 768 1024 --wg-configs 256,0,3,3,128,1 256,0,3,0,64 256,1,3,1,128,1
gpu_cleanup
