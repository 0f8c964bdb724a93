#!/usr/bin/env bash
# RECORD ONLY: ran in session 28 (runs 2-3: 0d1bf66 / 9abb50b; run 4: c764e37; run 5: 26d9179); codes it names may no longer be compiled (csrc/fp8_tma.cuh kTmaKeys).
# Session 28 runs 2-4: the FP8 TMA ring decode kernel (csrc/fp8_tma.cuh, T = 1 codes): build, its GPU tests and
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
# CASES: "NxK M gemv-codes pair-codes" (run 2: every key of the first list on the three shapes)
FEW=101041402,101041802,101041902,101041804,101081402,101081502,101081404
FEWX=111041402,111041802,111041902,111041804,111081402,111081502,111081404
WIDE=101042304,101044404,101044504,101042404
WIDEX=111042304,111044404,111044504,111042404
CASES=${CASES:-"2112x7168 16 $FEW $FEW,$FEWX;2112x7168 8 $FEW $FEW,$FEWX;2112x7168 1 $FEW $FEW,$FEWX;7168x16384 16 $WIDE $WIDE,$WIDEX;7168x16384 1 $WIDE $WIDE,$WIDEX"}
IFS=';' read -ra cases <<< "$CASES"
for case in "${cases[@]}"; do
    set -- $case
    gpu_probe "p_$1_m$2" 100 "^PREQ M|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes "$1" --m "$2" \
        --gemv-codes "$3" --pair-codes "$4" --qmodes early,late --kernel-codes ""
done
