#!/usr/bin/env bash
# Session 39 run 7: the final tree (the few row at M <= 128 on 64-row warpgroups that take alternate superblocks,
# for both layer kinds). The wgmma and W4A16 dispatch GPU tests; the dispatch at M = 64 / 100 / 128 on 2112x7168
# for both layer kinds; then bench_linear --format w4a16 if the tests passed.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39h.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39h
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
for layer in sym-fp16 asym-bf16; do
  gpu_probe "final_$layer" 100 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes 2112x7168 --ms 64 100 128 --layer "$layer" --rotate-x --tokens 999 --wg-configs "128,4,4,3,64"
done
if grep -q " passed" "$OUT/wg_tests.txt" && ! grep -qE "failed|error" "$OUT/wg_tests.txt" \
    && grep -q " passed" "$OUT/w4_auto.txt" && ! grep -qE "failed|error" "$OUT/w4_auto.txt"; then
  mkdir -p "$DEST/linear"
  timeout 150 python benchmarks/bench_linear.py --format w4a16 --out "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" | tail -n 30
else
  echo "tests did not pass: no bench_linear"
fi
gpu_cleanup
