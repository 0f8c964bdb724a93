#!/usr/bin/env bash
# W4A16 register decode kernel launch configs for the cases the dispatch table sends to it
# (benchmarks/bench_w4reg.py; BEST / CLASS / SET lines), after the CUDA W4A16 GPU tests. <= ~120 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4reg
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py >"$OUT/w4reg_pytest.txt" 2>&1
echo "tests: $(tail -n 1 "$OUT/w4reg_pytest.txt")"
timeout 140 python benchmarks/bench_w4reg.py --out "$OUT" > "$OUT/w4reg_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "BEST|CLASS|SET|skipped|Error" "$OUT/w4reg_bench.txt" | head -40
gpu_cleanup
