#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 2 at 963b1df.
# Session 47 run 2: do identical FP8 decode layer calls time differently from one CUDA graph to the next? The
# 2112x7168 M = 16 call (auto dispatch, committed table) captured into 8 graphs in one process, two processes
# (probe_fp8_graph_spread.py, cold weights, x rotated, alternated replays), with the codes / scales / output
# addresses each graph got; in the first process also in-kernel-quantization codes at M = 16.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47b
gpu_probe spread1 120 "SPREAD|rror|Traceback" benchmarks/probe_fp8_graph_spread.py --m 16 --graphs 8 \
    --kernel-codes 11116,11112,10011112,21108,10021108
gpu_probe spread2 90 "SPREAD|rror|Traceback" benchmarks/probe_fp8_graph_spread.py --m 16 --graphs 8
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
