#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 5 at 14553cd.
# Session 47 run 5: FP8_PAIR_CODE_ROW_PAD = 896 (the decode pair's CUDA quantizer writes code rows 7168 + 896 bytes
# apart) committed. Its GPU tests and the FP8 decode GEMV / quantizer files; probe_fp8_graph_spread.py (8 graphs per
# process) at pads 0 / 896 / 1920; bench_linear --ms 9 16 at 896 (committed) and 0, two passes each, alternated; then
# the issue-4 acceptance run (bench_linear --format fp8-block) at the committed tree into $DEST.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47e
gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py -k "pad or pair or carveout or trigger or auto or preq or x_ahead"
gpu_pytest group_quant 90 tests/gpu/test_group_quant_gpu.py
spread() {  # spread NAME PAD [ARGS...]
    local name=$1 pad=$2; shift 2
    mkdir -p "$OUT/$name"
    timeout 90 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CODE_ROW_PAD=$pad" -- \
        benchmarks/probe_fp8_graph_spread.py --out "$OUT/$name" --graphs 8 "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$? $(grep -E '^SPREAD M=' "$OUT/$name.log" | awk '{printf "%s ", $(NF-1)}')"
    grep -E "rror|Traceback" "$OUT/$name.log" | head -n 3
}
for pad in 0 896 1920; do spread m16_pad$pad $pad --m 16; done
for pass in 1 2; do
    for pad in 896 0; do
        mkdir -p "$OUT/bench_pad${pad}_$pass"
        timeout 80 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CODE_ROW_PAD=$pad" -- \
            benchmarks/bench_linear.py --format fp8-block --ms 9 16 --out "$OUT/bench_pad${pad}_$pass" \
            > "$OUT/bench_pad${pad}_$pass.log" 2>&1
        echo "bench pad $pad pass $pass rc=$?"
    done
done
python - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench_pad*/linear_fp8-block.json")):
    rows = json.load(open(f))["rows"]
    got = {r["m"]: r["median_us"] for r in rows if r.get("n") == 2112 and r["impl"] == "qlinear fp8-block"}
    print(f.split("/")[-2], " ".join(f"M={m} {v:.3f}" for m, v in sorted(got.items())))
PY
gpu_bench_format fp8-block 220
grep -E "M=(1|4|16) 2112|rror" "$OUT/bench_linear.log" | head -n 4
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
