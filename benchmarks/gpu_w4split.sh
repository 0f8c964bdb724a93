#!/usr/bin/env bash
# W4A16 register kernel with K split over a thread-block cluster at one token tile (codes 21210,
# 41210, 21211): the CUDA W4A16 GPU tests (every compiled code, the split codes), then
# bench_w4reg.py at M = 1 (7168x16384, 2112x7168, 24576x1536) with the split candidates.
# Ran once (session 8 run 4, at ea05587); the split codes were removed after it (no faster), so on
# later commits it times the unsplit configs only.
#   OUT=/some/dir bash benchmarks/gpu_w4split.sh   # <= ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4split
gpu_pytest w4split_pytest 90 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
timeout 120 python benchmarks/bench_w4reg.py --out "$OUT" --ms 1 > "$OUT/w4split_bench.txt" 2>&1
echo "bench rc=$?"
grep -E "M=1 .*(KS|R1 U2 W4 P0|R1 U2 W16|auto  |bf16)|BEST|skipped|Error" "$OUT/w4split_bench.txt" | head -60
gpu_cleanup
