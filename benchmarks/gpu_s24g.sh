#!/usr/bin/env bash
# Session 24 run 10: the TMA ring's k-step split (codes 7xxxx: CW pairs of consumer warps, each pair
# splitting every superblock's 8 k-steps 4 / 4, so twice the warps per SM with half the chain each)
# against the plain codes and the dispatch: 2112x7168 at M = 9 / 12 / 16, 7168x16384 at M = 16. The TMA
# GPU tests first.
#   OUT=/some/dir bash benchmarks/gpu_s24g.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24g
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 100 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 --reps 9 \
    --codes 21848 71844 71848
gpu_probe tma_many 80 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes many --ms 16 --reps 9 \
    --codes 24444 74444
gpu_cleanup
