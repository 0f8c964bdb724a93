#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 3 at 4bc792b (through gpu_s36e.sh).
# Session 36 run 3 (second half): every GPU test file at main's commit, one pytest per file (each with its
# own time limit, so that a slow file cannot take the others' results with it).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s36c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s36c
t0=$(date +%s)
for f in tests/gpu/test_*.py; do
    left=$((${TEST_BUDGET:-530} - ($(date +%s) - t0)))
    [ "$left" -lt 20 ] && { echo "$(basename "$f" .py): not run (time)"; continue; }
    gpu_pytest "$(basename "$f" .py)" "$left" "$f"
done
echo "tests took $(($(date +%s) - t0)) s"
gpu_cleanup
