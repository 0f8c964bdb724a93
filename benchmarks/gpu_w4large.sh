#!/usr/bin/env bash
# Issue 7, W4A16 at M = 4096: where the merged layer's time goes (probe) and the MLA step itself
# (5 interleaved fused / unfused passes), plus the 16x7168 RMSNorm latency probe.
# W4L_CASES=after: the GEMM-after-dequantize probe only; W4L_MLA=0 / W4L_LAT=0 skip those parts.
set -uo pipefail
cd "$(dirname "$0")/.."
a=0; b=0; c=0
python benchmarks/probe_w4a16_large_m.py --ms 4096 --passes ${W4L_PASSES:-3} --cases ${W4L_CASES:-all} --out "$OUT"; a=$?
if [ "${W4L_MLA:-1}" = 1 ]; then python benchmarks/bench_mla.py --formats w4a16 bf16 --ms 4096 --passes 5 --out "$OUT"; b=$?; fi
if [ "${W4L_LAT:-1}" = 1 ]; then
    python benchmarks/probe_latency.py --out "$OUT"; c=$?
    QLINEAR_BENCH_WARMUP_S=3 python benchmarks/probe_latency.py --out "$OUT/warm3"; c=$((c|$?))
fi
echo "probe=$a mla=$b latency=$c"; exit $((a|b|c))
