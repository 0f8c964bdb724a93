#!/usr/bin/env bash
# Needs f2a80fd (bench_w4reg.py --xs and the staged-x kernel, removed since).
# Session 17 run 3: the staged-x (XS) configs at M = 1 on the asymmetric and the GPTQ symmetric layer,
# against the committed table's configs (bench_w4reg.py --xs, XS_BASELINES), cold weights.
#   OUT=/some/dir bash benchmarks/gpu_s17xs2.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17xs2
for layer in asym-bf16 sym-fp16; do
    gpu_probe w4reg_xs_$layer ${BENCH_LIMIT:-150} "BEST|CLASS|SET|rror" benchmarks/bench_w4reg.py --xs --layer $layer --ms ${REG_MS:-1}
done
gpu_cleanup
