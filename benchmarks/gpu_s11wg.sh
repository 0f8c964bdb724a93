#!/usr/bin/env bash
# Session 11: the Hopper wgmma W4A16 GEMM (csrc/w4a16_wgmma.cuh). The SASS opcode histogram of its
# instances, its GPU tests (with the mma.sync GEMM's, one file), then probe_w4a16_gemm.py --family wgmma
# on the issue shapes.
#   OUT=/some/dir bash benchmarks/gpu_s11wg.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11wg
obj=$(find "$QLINEAR_BUILD_DIR" -name "w4a16_wgmma_launch*.o" | head -n 1)
python benchmarks/sass_hist.py "$obj" "${SASS_RE:-w4_wgmma_kernel}" --top 30 2>&1 | cut -c1-400 | tee "$OUT/sass.txt"
gpu_pytest wg_tests ${WG_TEST_T:-150} -x tests/gpu/test_w4a16_gemm_gpu.py ${WG_TEST_ARGS:-}
timeout ${GEMM_T:-300} python benchmarks/probe_w4a16_gemm.py --family wgmma --out "$OUT" \
    ${GEMM_ARGS:---ms 128 1024 --splits 0} 2>&1 | tee "$OUT/s11wg.log" | grep -E "GEMM|rror|skipped"
gpu_cleanup
