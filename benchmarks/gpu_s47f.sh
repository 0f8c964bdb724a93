#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 6 at 6b13a57.
# Session 47 run 6: the committed tree (FP8_PAIR_CODE_ROW_PAD = 896, the acceptance file of run 5): the FP8 GPU test
# files in full, then bench_linear --ms 9 16 at pad 896 (committed) and 0, two passes alternated, on this machine.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47f
gpu_pytest fp8 200 tests/gpu/test_fp8_gpu.py
gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest fp8_swapab_tma_quantized 120 tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_fp8_tma_gpu.py \
    tests/gpu/test_fp8_quantized_gpu.py
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
    sep = {r["m"]: r["median_us"] for r in rows if r.get("n") == 2112 and r["impl"].startswith("two separate")}
    print(f.split("/")[-2], " ".join(f"M={m} {v:.3f} (separate {sep.get(m, 0):.3f})" for m, v in sorted(got.items())))
PY
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
