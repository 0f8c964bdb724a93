#!/usr/bin/env bash
# Session 17 experiment: the register decode kernel with PDL also prefetching the warp's next
# QLINEAR_W4_PF_CHUNKS - 1 chunks into L2 before griddepcontrol.wait (1 = the first chunk only, in
# registers): bench_w4reg.py on the GPTQ symmetric layer at REG_MS for 1, 2 and 3.
#   OUT=/some/dir bash benchmarks/gpu_s17pf.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s17pf
for n in 1 2 3; do
    QLINEAR_W4_PF_CHUNKS=$n gpu_probe w4reg_pf$n ${BENCH_LIMIT:-150} "BEST|rror" benchmarks/bench_w4reg.py --layer sym-fp16 --ms ${REG_MS:-1 4}
done
gpu_cleanup
