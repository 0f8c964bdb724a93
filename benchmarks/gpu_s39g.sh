#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 6 at 0471b3e.
# (Its bench_linear step later became gpu_bench_linear in _gpu_build.sh: the same steps.)
# (its probe loop later became gpu_probe_layers in _gpu_build.sh: the same commands.)
# Session 39 run 6: 64-row CTAs whose warpgroups take alternate superblocks (mode 2, codes 21164 / 21166) against
# the k-step split on 2112x7168 at M = 100 / 128 (the symmetric few-row row at M <= 128: 128 tokens, 4 splits in
# pairs). The wgmma GPU tests (every compiled config, the new mode's test); the probe for both layer kinds; then,
# if an alternate config beat the row at both M on the symmetric layer, bench_linear --format w4a16 with it as
# that row (_CUDA_WGMMA_AUTO_SYM["few"][128], set before the benchmark runs: what committing it would give).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39g
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe_layers alt 150 "100 128" "128,4,4,3,64" "128,4,4,3,64,2" "128,4,6,3,64,2" "128,4,4,2,64,2"
choice=$(python - "$OUT/alt_sym-fp16.log" <<'PY'
import re, sys
t = {}
for ln in open(sys.argv[1]):
    m = re.match(r"GEMM M=(\d+) 2112x7168\s+wg (\S+)\s+([\d.]+) us", ln)
    if m:
        t.setdefault(m.group(2), {})[int(m.group(1))] = float(m.group(3))
row = t.get("128,4,4,3,64", {})
alts = {c: v for c, v in t.items() if c.endswith(",2") and len(v) == 2}
best = min(alts, key=lambda c: sum(alts[c].values())) if alts else None
ok = best and len(row) == 2 and all(alts[best][m] < row[m] for m in (100, 128))
print(best if ok else "")
PY
)
echo "alternate config chosen for bench_linear: '${choice}'"
[ -n "$choice" ] && gpu_bench_linear wg_tests 200 sym few 128 "$choice"
gpu_cleanup
