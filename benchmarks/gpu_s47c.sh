#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 3 at 8352256 (QLINEAR_FP8_ROT was removed after it: no gain).
# Session 47 run 3: run 2 found identical 2112x7168 M = 16 layer calls taking 7.95-8.20 us depending on the graph (the
# same graph index the same time in two processes: buffer placement). Two levers on where all 132 CTAs read x at the
# same moment: CTA tg visiting its warps' k-blocks from (tg * r) % 4 on (QLINEAR_FP8_ROT=r, a diagnostic launcher knob;
# every CTA reads the same x lines at once without it), and the CUDA quantizer's code rows padded
# (FP8_CUDA_QUANT_ROW_PAD bytes). probe_fp8_graph_spread.py, 8 graphs per process, one process per setting; M = 1 / 8
# (in-kernel quantization) with and without rotation.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47c
gpu_pytest xa 120 tests/gpu/test_fp8_cuda_gemv.py -k "x_ahead or preq_configs or shapes_auto"
QLINEAR_FP8_ROT=1 gpu_pytest xa_rot 120 tests/gpu/test_fp8_cuda_gemv.py -k "x_ahead or preq_configs or shapes_auto"
spread() {  # spread NAME ROT PAD [ARGS...]
    local name=$1 rot=$2 pad=$3; shift 3
    mkdir -p "$OUT/$name"
    QLINEAR_FP8_ROT=$rot timeout 90 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_CUDA_QUANT_ROW_PAD=$pad" -- \
        benchmarks/probe_fp8_graph_spread.py --out "$OUT/$name" --graphs 8 "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$? $(grep -E '^SPREAD M=' "$OUT/$name.log" | awk '{printf "%s ", $(NF-1)}')"
    grep -E "rror|Traceback" "$OUT/$name.log" | head -n 3
}
spread m16_rot0 0 0 --m 16
spread m16_rot1 1 0 --m 16
spread m16_rot0_pad128 0 128 --m 16
spread m16_rot1_pad128 1 128 --m 16
spread m16_rot0_pad512 0 512 --m 16
spread m16_rot3 3 0 --m 16
for m in 1 8; do
    spread m${m}_rot0 0 0 --m $m --graphs 4
    spread m${m}_rot1 1 0 --m $m --graphs 4
done
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
