#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 6 at 5e8d107 (code 21163 needs notes/s37_wgmma_two_per_sm.patch).
# Session 37 run 6: the final tree -- the TMA ring tests (1257434 / 1057434 removed after run 4) and the
# wgmma GEMM tests (code 21163 new: 64 rows x 128 tokens, 3 stages, at most 128 registers so two CTAs fit an
# SM); the wgmma probe on 2112x7168 sym-fp16 at M = 100 / 128, the old symmetric few row (128, 4, 4, 3, 64)
# against 21163 in pairs (128, 4, 3, 3, 64, 2), now the dispatch's; then bench_linear --format w4a16 (the
# acceptance file if 21163 is kept).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37f
gpu_pytest tma_tests 60 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest wg_tests 150 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe wg_probe 90 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 100 128 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "128,4,4,3,64" "128,4,3,3,64,2"
# bench_linear only if 21163 beat the old row at M = 128 (else run 4's file stands and the row goes back)
keep=$(python - "$OUT/wg_probe.log" <<'PY'
import re, sys
us = {}
for ln in open(sys.argv[1]):
    m = re.match(r"GEMM M=128 2112x7168\s+wg (\S+)\s+([\d.]+) us", ln)
    if m:
        us[m.group(1)] = float(m.group(2))
old, new = us.get("128,4,4,3,64"), us.get("128,4,3,3,64,2")
print(1 if old and new and new < old else 0)
PY
)
echo "21163 kept for bench_linear: $keep"
[ "$keep" = 1 ] || { gpu_cleanup; exit 0; }
mkdir -p "$DEST/linear"
timeout 200 python benchmarks/bench_linear.py --format w4a16 --out "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" | tail -n 30
gpu_cleanup
