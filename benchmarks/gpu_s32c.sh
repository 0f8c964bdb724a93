#!/usr/bin/env bash
# RECORD ONLY: ran in session 32 run 3 at b84ca77.
# Session 32 run 3: the x-staged kernel with 12-warp CTAs and pipe 4 (the CTA's weight rows bulk-prefetched into
# L2): its GPU tests, the register
# kernel's tests that changed (pipe refusals, auto tables), then its configs against the dispatch on short
# rows at M = 9 / 12 / 16 (symmetric fp16-scale layers as the acceptance benchmark, then asymmetric).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s32c
gpu_pytest xs_tests 150 tests/gpu/test_w4a16_xs_gpu.py
gpu_pytest reg_tests 150 tests/gpu/test_w4a16_cuda_gpu.py -k "pipe_out_of_range or auto_table or reg_pdl"
gpu_probe xs_sym 150 "BEST|rror|Traceback|skipped" benchmarks/bench_w4reg.py --xs --layer sym-fp16 --reps 11
gpu_probe xs_asym 150 "BEST|rror|Traceback|skipped" benchmarks/bench_w4reg.py --xs --layer asym-bf16 --reps 11 --ms 16
gpu_cleanup
