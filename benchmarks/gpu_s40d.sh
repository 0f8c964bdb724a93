#!/usr/bin/env bash
# RECORD ONLY: ran in session 40 run 5 at 4ddb05c (mode 5 reverted after it; notes/s40_one_warpgroup.patch).
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh, its choice benchmarks/probe_beats_row.py:
# the same steps.)
# (its probes later became gpu_probe_layers / gpu_probe_wg and its choice and bench_linear steps gpu_bench_if_beats in
# _gpu_build.sh: the same commands.)
# Session 40 run 5: 64-row CTAs of one warpgroup that takes all 8 k-steps of every superblock (mode 5, codes 51164 /
# 51166 / 51323; one wgmma group of 8 k-steps per superblock where the k-step split's two warpgroups issue two of 4)
# against the few-row rows: 2112x7168 at M = 1024 (256 tokens, 3 stages) for both layer kinds, and M = 128 against
# mode 2 (symmetric). The new mode's bit-equality test (against 128-row CTAs) and the every-config test; then, if
# the 256-token config beat the row at M = 1024 on both layers, bench_linear --format w4a16 with it as the few-row
# row at M <= 1024 (_CUDA_WGMMA_AUTO["few"], set before the benchmark runs: what committing it would give).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s40d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s40d
gpu_pytest wg_tests 120 tests/gpu/test_w4a16_gemm_gpu.py -k "one_warpgroup or every_config"
gpu_probe_layers solo 90 1024 "256,0,3,0,64" "256,0,3,0,64,5"
gpu_probe_wg solo128 60 2112x7168 128 sym-fp16 "128,4,6,3,64,2" "128,4,6,3,64,5" "128,4,4,3,64,5"
gpu_bench_if_beats solo mode-5 150 256,0,3,0,64 256,0,3,0,64,5
gpu_cleanup
