#!/usr/bin/env bash
# Session 28 run 2: the FP8 TMA ring decode kernel (csrc/fp8_tma.cuh, T = 1 codes): build, its GPU tests and
# the register kernel's pre-quantized tests (regression), then probe_fp8_preq.py (cold weights, alternated
# graph replays) on 7168x16384 at M = 1 / 8 / 16, 2112x7168 and 24576x1536 at M = 16: the GEMV alone and
# the quantizer + GEMV pair for every compiled shape key, against Triton and the auto dispatch.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28b.sh
DEST=${OUT:?}
export OUT=/tmp/s28b
rm -rf "$OUT"
source "$(dirname "$0")/_gpu_build.sh"
trap 'tar czf "$DEST/s28b.tgz" -C "$OUT" .' EXIT
gpu_build s28b
[ "$build_rc" -ne 0 ] && exit 1
[ -z "${SKIP_TESTS:-}" ] && gpu_pytest tma 150 tests/gpu/test_fp8_tma_gpu.py
[ -z "${SKIP_TESTS:-}" ] && gpu_pytest preq 120 tests/gpu/test_fp8_cuda_gemv.py -k "preq or graph or auto"
TMA=101042404,101042402,101042304,101041404,101041402,101044404
for case in "7168x16384 16" "7168x16384 1" "2112x7168 16" "24576x1536 16" "7168x16384 8"; do
    set -- $case
    gpu_probe "p_$1_m$2" 100 "^PREQ M|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes "$1" --m "$2" \
        --gemv-codes "$TMA,1011104" --pair-codes "$TMA" --qmodes early,late --kernel-codes ""
done
