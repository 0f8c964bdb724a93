#!/usr/bin/env bash
# RECORD ONLY: ran in session 40 run 1 at 5a570a8 (mode 3 reverted after it; notes/s40_own_rings.patch).
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh: the same steps.)
# Session 40 run 1: 64-row CTAs whose warpgroups keep their half of every superblock in a stage ring of their own
# (mode 3, codes 31166 / 31324 / 31326) against the k-step split with one shared ring (the few-row row at
# M <= 1024: 256 tokens, 3 stages) on 2112x7168 at M = 768 / 1024, and against mode 2 at M = 100 / 128. The wgmma
# GPU tests (every compiled config, the new mode's bit-equality test) and the layer dispatch tests (session 39's
# last dispatch row was not run on a GPU); the probe for both layer kinds; then, if a mode-3 config beat the row
# at M = 1024 on both layers, bench_linear --format w4a16 with it as the few-row row at M <= 1024
# (_CUDA_WGMMA_AUTO["few"], set before the benchmark runs: what committing it would give).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s40a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s40a
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest layer_tests 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
for layer in sym-fp16 asym-bf16; do
  gpu_probe "own_$layer" 200 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes 2112x7168 --ms 768 1024 --layer "$layer" --rotate-x --tokens 999 \
      --wg-configs "256,0,3,0,64" "256,0,6,0,64,3" "256,0,4,0,64,3"
  gpu_probe "own128_$layer" 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes 2112x7168 --ms 100 128 --layer "$layer" --rotate-x --tokens 999 \
      --wg-configs "128,4,6,3,64,2" "128,4,6,3,64,3"
done
choice=$(python - "$OUT/own_sym-fp16.log" "$OUT/own_asym-bf16.log" <<'PY'
import re, sys
wins = []
for path in sys.argv[1:]:
    t = {}
    for ln in open(path):
        m = re.match(r"GEMM M=(\d+) 2112x7168\s+wg (\S+)\s+([\d.]+) us", ln)
        if m:
            t.setdefault(m.group(2), {})[int(m.group(1))] = float(m.group(3))
    row = t.get("256,0,3,0,64", {}).get(1024)
    wins.append({c for c, v in t.items() if c.endswith(",3") and row and v.get(1024, 1e9) < row})
both = set.intersection(*wins) if wins else set()
print(sorted(both)[-1] if both else "")
PY
)
echo "mode-3 config chosen for bench_linear: '${choice}'"
[ -n "$choice" ] && gpu_bench_linear wg_tests 200 auto few 1024 "$choice"
gpu_cleanup
