#!/usr/bin/env bash
# Session 10: the W4A16 register kernel's pipe 2 (chunks dealt round-robin over the warps) against
# the contiguous K slices (pipe 0 / 1): GPU tests of the register kernel (every code with pipe 2, the
# fold with pipe 2, pipe out of range refused), then bench_w4reg.py at M = 1 / 4 / 16.
#   OUT=/some/dir bash benchmarks/gpu_s10rr.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10rr
gpu_pytest w4_tests 150 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
timeout 300 python benchmarks/bench_w4reg.py --out "$OUT" --ms 1 4 16 > "$OUT/w4reg_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "BEST|CLASS|SET|skipped|Error| P2" "$OUT/w4reg_bench.txt" | head -80
gpu_cleanup
