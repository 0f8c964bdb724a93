#!/usr/bin/env bash
# MLA tail at large M (probe_slices) and the MLA step at M = 4096 with alternated replays.
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_slices.py --out "$OUT"; a=$?
python benchmarks/bench_mla.py --formats w4a16 bf16 --ms 4096 --passes ${MLA_PASSES:-3} --out "$OUT"; b=$?
echo "slices=$a mla=$b"; exit $((a|b))
