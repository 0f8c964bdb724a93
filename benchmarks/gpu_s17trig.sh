#!/usr/bin/env bash
# Needs 94b2d6c (the QLINEAR_W4_TRIGGER switch; the kernel now fixes the trigger by token tiles).
# Session 17 experiment: the register decode kernel triggering its PDL dependents at its start
# (QLINEAR_W4_TRIGGER=early) against after its main loop (late, the default): bench_w4reg.py on the
# GPTQ symmetric layer at REG_MS, both in one run.
#   OUT=/some/dir bash benchmarks/gpu_s17trig.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17trig
for tr in late early late2; do
    QLINEAR_W4_TRIGGER=${tr%2} gpu_probe w4reg_$tr ${BENCH_LIMIT:-150} "BEST|rror" benchmarks/bench_w4reg.py --layer sym-fp16 --ms ${REG_MS:-1 4 16}
done
gpu_cleanup
