#!/usr/bin/env bash
# Session 17 run 12: the register-config sweep (bench_w4reg.py, every REG_CONFIGS entry) on the
# asymmetric layer (asym-bf16: zero points, bf16 scales) at M in REG_MS, cold weights, against the
# committed table: do the table's fold entries still hold with the session's PDL changes?
#   OUT=/some/dir bash benchmarks/gpu_s17asym.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17asym
gpu_probe w4reg_asym ${BENCH_LIMIT:-200} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --layer asym-bf16 --ms ${REG_MS:-1 4 8 16}
gpu_cleanup
