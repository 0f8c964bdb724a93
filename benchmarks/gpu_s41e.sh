#!/usr/bin/env bash
# RECORD ONLY: ran in session 41 run 5 at fbbbf13 (lost; reverted after it, notes/s41_alt_three_stages.patch).
# (its probe loop later became gpu_probe_layers and its choice and bench_linear steps gpu_bench_if_beats in
# _gpu_build.sh: the same commands.)
# Session 41 run 5: mode 2 (warpgroups on alternate superblocks) at 256 tokens in 3 stages that pass from one
# warpgroup to the other (code 21323; until now mode 2 needed an even number of stages, four 68 KB ones at 256
# tokens, which do not fit). Its GPU tests (alternate superblocks against the k-step split and the reference, the
# every-config tests); the probe on 2112x7168 against the few row at M = 256 / 512 / 1024, both layer kinds; then, if
# it beat the row at M = 1024 on both, bench_linear --format w4a16 with it as the few row at M <= 1024.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s41e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s41e
gpu_pytest wg_tests 180 tests/gpu/test_w4a16_gemm_gpu.py -k "alternate or every_config or 64_and_192"
gpu_probe_layers alt 120 "256 512 1024" "256,0,3,0,64" "256,0,3,0,64,2"
gpu_bench_if_beats alt alternate-superblock 230 256,0,3,0,64 256,0,3,0,64,2
gpu_cleanup
