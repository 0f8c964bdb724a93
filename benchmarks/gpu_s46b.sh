#!/usr/bin/env bash
# RECORD ONLY: ran in session 46 run 2 at ed65826 (the x-staging kernel is not compiled since: notes/s46_x_staging.patch).
# Session 46 run 2: the x-staging FP8 decode GEMM (csrc/fp8_gemv_xs.cuh, X = 2 / 3 / 4: x's codes and scales
# bulk-copied into shared memory, shared over clusters of 1 / 2 / 4 CTAs). Its GPU tests; the GEMV alone and after
# the quantizer against the committed code on 2112x7168 at M = 16 / 12 / 9 (probe_fp8_xtraffic.py, cold weights,
# x rotated, alternated replays); then bench_linear at M = 9 / 16 with the fastest X >= 2 pair of M = 16 in the
# 2112x7168 row and as committed, two passes each.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s46b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s46b
gpu_pytest xs_tests 300 tests/gpu/test_fp8_cuda_gemv.py -k "x_staged or pair_chain or x_ahead"
XS="21011114,31011114,41011114,31011214,31011116,31011112,41011214"
gpu_probe xt 240 "XT|rror|Traceback" benchmarks/probe_fp8_xtraffic.py --ms 16,12,9 \
    --codes "11011114,$XS" --pair-codes "11011114,$XS" --diag-codes ""
best=$(python - "$OUT/xt.log" <<'PY'
import re, sys
best = None
for line in open(sys.argv[1]):
    m = re.match(r"XT M=16 2112x7168 pair (\d+)\s+([\d.]+) us", line)
    if m and int(m.group(1)) >= 20000000 and (best is None or float(m.group(2)) < best[1]):
        best = (int(m.group(1)), float(m.group(2)))
print(best[0] if best else "")
PY
)
echo "fastest x-staging pair at M = 16: ${best:-none}"
if [ -n "$best" ] && grep -q " passed" "$OUT/xs_tests.txt" && ! grep -qE "failed|error" "$OUT/xs_tests.txt"; then
    ROW="{(2112, 7168): ((8, 10011116), (16, $best, 'early')), (1536, 7168): ((8, 10011116), (16, 11011116, 'early')), (576, 7168): ((8, 10041108), (16, 11041108, 'early')), (7168, 16384): ((16, 101042304, 'early'),), None: 0}"
    for pass in 1 2; do
        for v in base xs; do
            mkdir -p "$OUT/bench_${v}_$pass"
            if [ $v = xs ]; then set -- "qlinear.ops.fp8:FP8_CUDA_CONFIG=$ROW"; else set -- "qlinear.ops.fp8:FP8_CUDA_QUANTIZER='triton'"; fi
            timeout 200 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format fp8-block \
                --ms 9 16 --out "$OUT/bench_${v}_$pass" > "$OUT/bench_${v}_$pass.log" 2>&1
            echo "bench $v $pass rc=$?"
            grep -E "M=(9|16) 2112|rror" "$OUT/bench_${v}_$pass.log" | head -n 12
        done
    done
fi
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
