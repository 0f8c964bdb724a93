#!/usr/bin/env bash
# Session 15 runs 5-7: the wgmma W4A16 GEMM after an instruction-count change. The CUDA W4A16 GEMM GPU
# tests ($W4_TESTS), the SASS of the 128-token bf16 instance (gzipped, for counting the main loop's
# instructions), probe_w4a16_gemm.py at M = 64 / 128 / 1024 on the three shapes (automatic config,
# symmetric fp16-scale layer), then bench_linear --format w4a16 at $BENCH_MS (empty: every M, the
# issue-5 acceptance benchmark). Which commit each run measured: results/session15/README.md.
#   run 5: BENCH_MS="64 128 1024" OUT=/some/dir bash benchmarks/gpu_s15wg.sh
#   run 6: W4_TESTS="tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py tests/gpu/test_w4a16_gpu.py" ...
#   run 7: (defaults)
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15wg
# shellcheck disable=SC2086
gpu_pytest gemm_tests ${GT_LIMIT:-240} ${W4_TESTS:-tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py}
gpu_sass "w4a16_wgmma_launch*.o" _ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li128ELi4EEEvNS0_8WgParamsE
P="--family wgmma --tokens 999 --layer sym-fp16"
gpu_probe wg 150 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384,2112x7168,24576x1536 --ms 64 128 1024
grep -hE "^GEMM M=" "$OUT"/wg.log | cut -c1-90
ms=()
[ -n "${BENCH_MS:-}" ] && ms=(--ms $BENCH_MS)
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 "${ms[@]}" --out "$OUT/linear" 2>&1 | tail -n 30
gpu_cleanup
