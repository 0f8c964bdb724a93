#!/usr/bin/env bash
# Issue 7, W4A16 at M = 4096: where the merged layer's time goes (probe) and the MLA step itself
# (5 interleaved fused / unfused passes), plus the 16x7168 RMSNorm latency probe.
set -uo pipefail
cd "$(dirname "$0")/.."
python benchmarks/probe_w4a16_large_m.py --ms 4096 --passes 3 --out "$OUT"; a=$?
python benchmarks/bench_mla.py --formats w4a16 bf16 --ms 4096 --passes 5 --out "$OUT"; b=$?
python benchmarks/probe_latency.py --out "$OUT"; c=$?
echo "probe=$a mla=$b latency=$c"; exit $((a|b|c))
