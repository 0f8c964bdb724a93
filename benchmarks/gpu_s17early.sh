#!/usr/bin/env bash
# Needs c1fbc00 (the rotated-loop kernel with staged x; replaced since).
# Session 17: the register decode kernel with its first chunk's weights, scales and zero points loaded
# before griddepcontrol.wait (instead of L2 prefetches): the register-kernel GPU tests, then the config
# sweeps on the GPTQ symmetric layer (bench_w4reg.py at REG_MS, and --xs at M = 1), cold weights.
#   OUT=/some/dir bash benchmarks/gpu_s17early.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17early
gpu_pytest reg_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_xs.py tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
gpu_probe w4reg_sym ${BENCH_LIMIT:-200} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --layer sym-fp16 --ms ${REG_MS:-1 4 8 16}
gpu_probe w4reg_xs ${BENCH_LIMIT:-200} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --xs --layer sym-fp16 --ms 1
gpu_cleanup
