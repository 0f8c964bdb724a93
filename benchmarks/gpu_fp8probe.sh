#!/usr/bin/env bash
# FP8 block small-M probe on the GPU machine (<= 150 s): time split and a layer-timed config sweep.
#   OUT=/some/dir [FP8PROBE_ARGS=--round2] bash benchmarks/gpu_fp8probe.sh
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
timeout 140 python benchmarks/bench_fp8_probe.py --out "$OUT" --budget-s "${FP8PROBE_BUDGET_S:-100}" ${FP8PROBE_ARGS:-}
