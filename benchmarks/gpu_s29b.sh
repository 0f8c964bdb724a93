#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 runs 2 (7498317, codes misnamed: refused) and 3 (03b251e); the K splits of the TMA ring it measures were removed after run 3.
# Session 29 run 2: K splits in the FP8 TMA ring kernel (T = 1 codes, S field's tens digit): build, the TMA
# and register-kernel GPU tests, then probe_fp8_preq.py on 2112x7168 at M = 16 / 8 / 1: taller row tiles (R =
# 2 / 4) over a half / third / quarter of K against the dispatch (quantizer + 11011114; in-kernel 10011116).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29b
[ -n "${SKIP_TESTS:-}" ] || gpu_pytest tma 150 tests/gpu/test_fp8_tma_gpu.py
[ -n "${SKIP_TESTS:-}" ] || gpu_pytest fp8cuda 150 tests/gpu/test_fp8_cuda_gemv.py -k "preq or x_ahead or graph"
G16=${G16:-11011114,101041404,101444404,101344504,101242304,101242404,101444504}
P16=${P16:-11011114,101444404,111444404,101344504,111344504,101242304,101242404}
gpu_probe m16 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 16 --gemv-codes "$G16" \
    --pair-codes "$P16" --qmodes early --kernel-codes ""
P8=${P8:-11011114,101444404,111444404,101242304}
gpu_probe m8 120 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 8 --gemv-codes "" \
    --pair-codes "$P8" --qmodes early --kernel-codes 10011116
gpu_probe m1 120 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 1 --gemv-codes "" \
    --pair-codes "$P8" --qmodes early --kernel-codes 10011116
