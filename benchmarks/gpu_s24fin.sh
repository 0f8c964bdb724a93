#!/usr/bin/env bash
# Session 24 final runs (5, and 11 with the dispatch-table test): the layer GPU tests through the
# automatic dispatch (('few', 2) is now the TMA ring 21848; from run 11 ('many', 2) the k-step split
# 74444), then the issue-5 acceptance benchmark (bench_linear --format w4a16: whole layer, GPTQ symmetric
# layer, cold weights, against bf16 F.linear and tinygemm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s24fin.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24fin
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
timeout ${W4_LIMIT:-240} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
