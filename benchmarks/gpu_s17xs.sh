#!/usr/bin/env bash
# Needs 4f5035b .. f2a80fd (the staged-x register kernel, config element xs; removed in the next commits).
# Session 17: the W4A16 register decode kernel with x staged in shared memory (XS, config element xs):
# its GPU tests, the register-kernel tests it could disturb, then bench_w4reg.py --xs (every staged-x
# config against the committed table's config, GPTQ symmetric layer, cold weights, M in REG_MS).
#   OUT=/some/dir bash benchmarks/gpu_s17xs.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17xs
gpu_pytest xs_tests ${GT_LIMIT:-150} tests/gpu/test_w4a16_xs.py tests/gpu/test_w4a16_cuda_gpu.py -k "xs or reg_every_code or configs or big_shapes"
gpu_probe w4reg_xs ${BENCH_LIMIT:-300} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --xs --layer sym-fp16 --ms ${REG_MS:-1 4}
gpu_cleanup
