#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 4 at b16bd38.
# Session 47 run 4: padding the CUDA quantizer's code rows (FP8_CUDA_QUANT_ROW_PAD bytes; run 3: 128 took the
# 2112x7168 M = 16 graphs 8.36-8.52 against 8.48-8.63 on one machine) on the committed GEMV: probe_fp8_graph_spread.py
# (8 graphs per process) at pads 0 / 128 / 256 / 384 / 896, 0 and 128 twice, M = 9 at 0 / 128; then bench_linear
# --ms 9 16 at pad 128 and 0, two passes each, alternated.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47d
spread() {  # spread NAME PAD [ARGS...]
    local name=$1 pad=$2; shift 2
    mkdir -p "$OUT/$name"
    timeout 90 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_CUDA_QUANT_ROW_PAD=$pad" -- \
        benchmarks/probe_fp8_graph_spread.py --out "$OUT/$name" --graphs 8 "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$? $(grep -E '^SPREAD M=' "$OUT/$name.log" | awk '{printf "%s ", $(NF-1)}')"
    grep -E "rror|Traceback" "$OUT/$name.log" | head -n 3
}
for pad in 0 128 256 384 896 0 128; do spread m16_pad${pad}_$RANDOM $pad --m 16; done
for pad in 0 128; do spread m9_pad$pad $pad --m 9; done
for pass in 1 2; do
    for pad in 128 0; do
        mkdir -p "$OUT/bench_pad${pad}_$pass"
        timeout 80 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_CUDA_QUANT_ROW_PAD=$pad" -- \
            benchmarks/bench_linear.py --format fp8-block --ms 9 16 --out "$OUT/bench_pad${pad}_$pass" \
            > "$OUT/bench_pad${pad}_$pass.log" 2>&1
        echo "bench pad $pad pass $pass rc=$?"
        grep -E "M=(9|16) 2112|rror" "$OUT/bench_pad${pad}_$pass.log" | head -n 4
    done
done
python - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench_pad*/linear_fp8-block.json")):
    rows = json.load(open(f))["rows"]
    got = {r["m"]: r["median_us"] for r in rows if r.get("n") == 2112 and r["impl"] == "qlinear fp8-block"}
    print(f.split("/")[-2], " ".join(f"M={m} {v:.3f}" for m, v in sorted(got.items())))
PY
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
