#!/usr/bin/env bash
# Needs f19d4f8 (the soft chunk pipeline, pipe 3 / 4; removed since).
# Session 17: the register decode kernel with the first chunk's weights, scales and zero points loaded
# before griddepcontrol.wait and the soft chunk pipeline (pipe 3 / 4, PK 2): its GPU tests, then the
# register-config sweeps (bench_w4reg.py, every REG_CONFIGS entry) on the GPTQ symmetric layer at
# REG_MS and on the asymmetric layer at ASYM_MS, cold weights.
#   OUT=/some/dir bash benchmarks/gpu_s17soft.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17soft
gpu_pytest reg_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
gpu_probe w4reg_sym ${BENCH_LIMIT:-200} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --layer sym-fp16 --ms ${REG_MS:-1 4 8 16}
gpu_probe w4reg_asym ${BENCH_LIMIT:-200} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --layer asym-bf16 --ms ${ASYM_MS:-1 4}
gpu_cleanup
