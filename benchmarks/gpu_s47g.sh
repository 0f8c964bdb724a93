#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 7 at 3518212.
# Session 47 run 7: the same A/B as run 6 on a freshly started machine (runs 5-6 shared one): probe_fp8_graph_spread.py
# at FP8_PAIR_CODE_ROW_PAD 0 / 896 (8 graphs each), then bench_linear --ms 16 at 896 (committed) and 0, one pass each.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47g
for pad in 0 896; do
    mkdir -p "$OUT/m16_pad$pad"
    timeout 60 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CODE_ROW_PAD=$pad" -- \
        benchmarks/probe_fp8_graph_spread.py --out "$OUT/m16_pad$pad" --graphs 8 --m 16 > "$OUT/m16_pad$pad.log" 2>&1
    echo "m16_pad$pad rc=$? $(grep -E '^SPREAD M=' "$OUT/m16_pad$pad.log" | awk '{printf "%s ", $(NF-1)}')"
done
for pad in 896 0; do
    mkdir -p "$OUT/bench_pad$pad"
    timeout 70 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CODE_ROW_PAD=$pad" -- \
        benchmarks/bench_linear.py --format fp8-block --ms 16 --out "$OUT/bench_pad$pad" > "$OUT/bench_pad$pad.log" 2>&1
    echo "bench pad $pad rc=$? $(python -c "
import json,sys
rows = json.load(open('$OUT/bench_pad$pad/linear_fp8-block.json'))['rows']
print(' '.join(f\"{r['impl'][:12]} {r['median_us']:.3f}\" for r in rows if r.get('n') == 2112))")"
done
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
