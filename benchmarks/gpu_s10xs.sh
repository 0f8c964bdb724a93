#!/usr/bin/env bash
# Session 10: the W4A16 register kernel with x's row in shared memory (xsmem 1, M = 1): its GPU tests
# (bit-equal to the register-fragment path, refusals, the table fallback) with the other register
# kernel tests, then bench_w4reg.py at M = 1 on the three shapes.
#   OUT=/some/dir bash benchmarks/gpu_s10xs.sh   # ~120 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10xs
gpu_pytest w4_tests 200 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
timeout 300 python benchmarks/bench_w4reg.py --out "$OUT" --ms 1 > "$OUT/w4reg_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "BEST|CLASS|SET|RING|skipped|Error| X1" "$OUT/w4reg_bench.txt" | head -60
gpu_cleanup
