#!/usr/bin/env bash
# RECORD ONLY: ran in session 40 run 2 at 997e307 (mode 4 reverted after it; notes/s40_half_token_stages.patch).
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh, its choice benchmarks/probe_beats_row.py:
# the same steps.)
# (its probes later became gpu_probe_layers / gpu_probe_wg and its choice and bench_linear steps gpu_bench_if_beats in
# _gpu_build.sh: the same commands.)
# Session 40 run 2: 256-token CTAs whose stages hold half the tokens of a superblock (mode 4, codes 40325 / 41325 /
# 41326: each half multiplied by its own m64n128 wgmma group and released when that group completes, so the ring
# keeps about twice as much x in flight ahead) against the one-stage-per-superblock ring: 2112x7168 at M = 768 /
# 1024 with 64-row CTAs (the few-row row), 2048x7168 at M = 1024 in pairs of 128-row CTAs (the paired row), and
# 24576x1536 / 7168x16384 at M = 1024 against the producer row. The wgmma GPU tests (every compiled config, the
# new mode's bit-equality test); then, if a mode-4 64-row config beat the row at M = 1024 on both layers,
# bench_linear --format w4a16 with it as the few-row row at M <= 1024 (_CUDA_WGMMA_AUTO["few"], set before the
# benchmark runs: what committing it would give).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s40b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s40b
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe_layers tok2 200 "768 1024" "256,0,3,0,64" "256,0,6,0,64,4" "256,0,5,0,64,4"
gpu_probe_wg tok2_paired 120 2048x7168 1024 sym-fp16 "256,2,3,3,128" "256,2,5,3,128,4"
gpu_probe_wg tok2_wide 200 24576x1536,7168x16384 1024 sym-fp16 "256,0,3,0,128,1" "256,0,5,0,128,4"
gpu_bench_if_beats tok2 mode-4 200 256,0,3,0,64 256,0,6,0,64,4 256,0,5,0,64,4
gpu_cleanup
