#!/usr/bin/env bash
# Session 17: the register-config sweep (bench_w4reg.py, every REG_CONFIGS entry) on the GPTQ symmetric
# layer at M in REG_MS (default 2 4 8 16), cold weights, against the committed table.
#   OUT=/some/dir bash benchmarks/gpu_s17sweep.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17sweep
gpu_probe w4reg_sym ${BENCH_LIMIT:-400} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --layer sym-fp16 --ms ${REG_MS:-2 4 8 16}
gpu_cleanup
