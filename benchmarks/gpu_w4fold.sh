#!/usr/bin/env bash
# W4A16 register decode kernel's zero-point fold (csrc/w4a16_gemv.cuh FOLD 1): GPU tests
# (tests/gpu/test_w4a16_fold.py), then fold off / on at the dispatch's register configs and their
# neighbours vs the committed dispatch (benchmarks/bench_w4fold.py; FOLD lines). <= ~100 s after the build.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4fold
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_fold.py >"$OUT/w4fold_pytest.txt" 2>&1
echo "tests: $(tail -n 1 "$OUT/w4fold_pytest.txt")"
grep -E "^(FAILED|ERROR)|Error" "$OUT/w4fold_pytest.txt" | head -8
timeout 60 python benchmarks/bench_w4fold.py --out "$OUT" > "$OUT/w4fold_bench.txt" 2>&1
echo "bench rc=$?"
grep -E " us |skipped|Error|reg config" "$OUT/w4fold_bench.txt" | grep -v "^FOLD" | head -150
grep -E "^FOLD" "$OUT/w4fold_bench.txt"
gpu_cleanup
