#!/usr/bin/env bash
# Issue 3 acceptance run: the full RMSNorm benchmark with every implementation of a case timed with
# alternated graph replays (--paired; RMS_QUICK=1: the 32768-token cases and latency only).
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/bench_rms_norm.py --paired ${RMS_QUICK:+--quick} --out "$OUT"
