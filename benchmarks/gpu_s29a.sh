#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 1 at 5711aa2; the T = 2 kernel (csrc/fp8_sx.cuh) it measures was removed after it.
# Session 29 run 1: the cluster-quantized FP8 decode kernel (T = 2 codes, csrc/fp8_sx.cuh): build, its GPU
# tests and the register kernel's, then probe_fp8_preq.py on 2112x7168 at M = 16 and 8 (the dispatch's
# pair / in-kernel code against T = 2 codes: cluster size, L2 prefetch, PF, warps).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29a
gpu_pytest sx 150 tests/gpu/test_fp8_sx_gpu.py
[ -n "${SKIP_TESTS:-}" ] || gpu_pytest fp8cuda 150 tests/gpu/test_fp8_cuda_gemv.py -k "preq or x_ahead or graph"
K16=${K16:-200021116,210021116,200041116,210041116,200081116,200011116,200021216,210021216,200021114,200021112}
gpu_probe m16 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 16 --gemv-codes 11011114 \
    --pair-codes 11011114 --qmodes early --kernel-codes "$K16"
K8=${K8:-10011116,200021116,210021116,200041116,210041116,200021216}
gpu_probe m8 120 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 8 --gemv-codes "" \
    --pair-codes "" --qmodes early --kernel-codes "$K8"
