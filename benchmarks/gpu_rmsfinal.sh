#!/usr/bin/env bash
# Issue 3 acceptance: the RMSNorm GPU tests of the committed rules, then bench_rms_norm.py --paired (full).
set -uo pipefail
cd "$(dirname "$0")/.."
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py -k "committed_rules or triton_loop_kernel or auto_backend" 2>&1 | tail -n 2
python benchmarks/bench_rms_norm.py --paired --out "$OUT"
