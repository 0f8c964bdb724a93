#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 7 at 185376b.
# Session 30 run 7: SW = 2 (swizzled x, one 3-D box per superblock) at one token tile as well: codes 252444,
# 232844, 222464 (twins of the dispatch's 52444, 32844, 22464): the TMA ring tests (twin bit-equality at
# M = 1 / 3 / 8 too) and the dispatch-table test, then bench_w4tma against the twins at M = 2 .. 8.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30g
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_probe tma_few 80 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes few --ms 2 4 8 \
    --reps 9 --codes 52444 252444
gpu_probe tma_many 80 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes many --ms 1 4 8 \
    --reps 9 --codes 32844 232844 22464 222464
gpu_cleanup
