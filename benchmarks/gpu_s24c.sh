#!/usr/bin/env bash
# Session 24 run 3: why the TMA ring with one row tile per CTA costs 5.6 us at M = 8 and 8.8 at M = 12
# on 2112x7168 (run 2): eight consumer warps at two token tiles (21848, 21858) timed, and Nsight Compute
# of 21844 at M = 8 and M = 16 and of the register kernel (the dispatch at M = 16).
#   OUT=/some/dir bash benchmarks/gpu_s24c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24c
gpu_probe tma_few 100 "us|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 16 --reps 9 \
    --codes 21844 21854 21848 21858 22444
gpu_ncu ncu_m16 120 "gemv" benchmarks/probe_w4tma_ncu.py --shape 2112x7168 --m 16 --codes 21844
gpu_ncu ncu_m8 100 "gemv" benchmarks/probe_w4tma_ncu.py --shape 2112x7168 --m 8 --codes 21844
gpu_cleanup
