#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 4 at 47a91e1.
# Session 44 run 4: where the FP8 layer's eager host time goes at M = 48 (the Triton GEMM path, about 8x F.linear
# in run 3) and M = 16: bench_host.py --profile (cProfile of 300 eager calls per layer at the first M), M = 48 first,
# then M = 16 first.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44d
for ms in "48 16" "16 48"; do
    d="$DEST/host_prof_${ms%% *}"
    mkdir -p "$d"
    # shellcheck disable=SC2086  # ms is a list of M values
    timeout 200 python benchmarks/bench_host.py --ms $ms --reps 11 --profile --out "$d" > "$OUT/host_prof_${ms%% *}.log" 2>&1
    echo "host profile ${ms%% *} rc=$?"
    grep -E "F.linear|fp8-block|rror" "$OUT/host_prof_${ms%% *}.log" | head -n 8
    head -n 40 "$d/profile_fp8-block.txt" 2>/dev/null
done
echo "run: $(( $(date +%s) - t_all )) s"
