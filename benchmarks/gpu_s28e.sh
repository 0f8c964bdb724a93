#!/usr/bin/env bash
# Session 28 run 6: the FP8 TMA ring at the session's end (pair split and losing keys removed, kTmaKeys
# trimmed): build and its GPU tests plus the register kernel's auto-dispatch tests.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28e.sh
DEST=${OUT:?}
export OUT=/tmp/s28e
rm -rf "$OUT"
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
trap 'tar czf "$DEST/s28e.tgz" -C "$OUT" .' EXIT
gpu_build s28e
[ "$build_rc" -ne 0 ] && exit 1
gpu_pytest tma 60 tests/gpu/test_fp8_tma_gpu.py
gpu_pytest fp8cuda 40 tests/gpu/test_fp8_cuda_gemv.py -k "auto"
