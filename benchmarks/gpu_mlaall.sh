#!/usr/bin/env bash
# Issue 7 acceptance run: bench_mla for every format and M (alternated fused / unfused replays).
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/bench_mla.py --passes ${MLA_PASSES:-3} --out "$OUT"
