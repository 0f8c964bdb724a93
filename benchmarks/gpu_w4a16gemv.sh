#!/usr/bin/env bash
# CUDA W4A16 decode kernels (backend "cuda", csrc/w4a16_gemv.cuh) on the GPU machine (< 120 s):
# the micro-benchmark library (csrc/probe/w4a16_probe.cu, nvcc, in the background, ~10 s) and the
# extension (timed), then tests/gpu/test_w4a16_cuda_gpu.py, then benchmarks/bench_w4a16_cuda.py
# (ladder lines: read / ring / reg stages m1 loads, m2 +dequant, full; real kernels at M 1, 4, 16;
# BEST lines per case, the SET line with the dispatch constants, AUTO lines per case;
# JSON in $OUT/w4a16_cuda.json).
#   OUT=/some/dir bash benchmarks/gpu_w4a16gemv.sh
source "$(dirname "$0")/_gpu_build.sh"
gpu_probe_lib_start w4a16gemv
gpu_build w4a16gemv
gpu_probe_lib_wait
echo "== GPU tests"
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py \
    >"$OUT/w4a16gemv_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/w4a16gemv_pytest.txt"
echo "== benchmark"
timeout 70 python benchmarks/bench_w4a16_cuda.py --out "$OUT" --budget-s 55 --probe-lib "$probe_so" 2>&1 \
    | tee "$OUT/w4a16gemv_bench.txt"
bench_rc=${PIPESTATUS[0]}
echo "build rc=$build_rc (${build_s} s)  tests rc=$test_rc  bench rc=$bench_rc  total $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
