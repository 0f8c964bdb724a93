#!/usr/bin/env bash
# RECORD ONLY: ran in session 41 run 4 at a0dfabc (mode 3 lost and was reverted after it; notes/s41_split_barriers.patch).
# (Its choice step later became benchmarks/probe_beats_row.py: the same test.)
# (its probe loop later became gpu_probe_layers and its choice and bench_linear steps gpu_bench_if_beats in
# _gpu_build.sh: the same commands.)
# Session 41 run 4: mode 3 of the wgmma GEMM (code 31323: the 64-row k-step split with one `full` mbarrier per x
# atom, so warpgroup 0 starts on a stage once its atom and the weight rows are in; run 3's Nsight Compute put 13 %
# of the 64-row CTA's stall samples on the `full` waits). Its GPU test (bit-equal to the k-step split) and the
# every-config test; the probe at M = 1024 / 768 on 2112x7168 against the few row, both layer kinds; then, if it
# beat the row on both, bench_linear --format w4a16 with it as the few row at M <= 1024.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s41d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s41d
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "split_barriers or every_config or 64_and_192"
gpu_probe_layers split 100 "768 1024" "256,0,3,0,64" "256,0,3,0,64,3"
gpu_bench_if_beats split split-barrier 230 256,0,3,0,64 256,0,3,0,64,3
gpu_cleanup
