#!/usr/bin/env bash
# W4A16 register kernel with four 16-row tiles per CTA at two token tiles (code 4120): the CUDA
# W4A16 GPU tests (every compiled register code) and the fold tests, then bench_w4reg.py at M = 16
# (and 8 on 7168x16384).   OUT=/some/dir bash benchmarks/gpu_w4r4.sh   # <= ~120 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4r4
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py >"$OUT/w4r4_pytest.txt" 2>&1
echo "tests: $(tail -n 1 "$OUT/w4r4_pytest.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/w4r4_pytest.txt" | head -8
timeout 80 python benchmarks/bench_w4reg.py --out "$OUT" --ms 8 16 > "$OUT/w4r4_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "M=(8|16) .*(R4|R2 U1 W4 P1|R1 U1 W8 P1|R2 U1 W2 P0|auto  |bf16)|BEST|skipped|Error" "$OUT/w4r4_bench.txt" | head -60
gpu_cleanup
