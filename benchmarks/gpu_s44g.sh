#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 7 at a9ccfea.
# Session 44 run 7: the group quantizer's launcher dispatches lanes per group through code_list.h's
# with_listed_code instead of its own switch: the quantizer's GPU tests.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44g
gpu_pytest gq_tests 120 tests/gpu/test_group_quant_gpu.py
echo "run: $(( $(date +%s) - t_all )) s"
