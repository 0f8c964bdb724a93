#!/usr/bin/env bash
# RECORD ONLY: ran in session 47 run 1 at df7539d (the staged-weight kernel it measured was removed after it: notes/s47_staged_weights.patch).
# Session 47 run 1: the staged-weight FP8 decode GEMV (code digit X = 2, fp8_gemv_ws_kernel: every k-block of a
# warp's weights copied into shared memory with cp.async before the PDL wait) on 2112x7168. Its GPU tests (bit-equal
# to the x-ahead register kernel at the same warps), then probe_fp8_preq.py (cold weights, x rotated, alternated
# replays): M = 16 / 9 GEMV alone and after the CUDA quantizer (trigger first) at FP8_PAIR_CARVEOUT 10 / 60 / 100
# (the staged tile needs ~127 KB: 57 %), and M = 1 / 8 with in-kernel quantization against 10011116.
#   (device) QLINEAR_GIT_COMMIT=<commit> OUT=$OUT bash benchmarks/gpu_s47a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s47a
gpu_pytest staged 150 tests/gpu/test_fp8_cuda_gemv.py -k "staged or x_ahead or carveout"
probe() {  # probe NAME CARVEOUT ARGS...
    local name=$1 cv=$2; shift 2
    mkdir -p "$OUT/$name"
    timeout 90 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CARVEOUT=$cv" -- \
        benchmarks/probe_fp8_preq.py --out "$OUT/$name" --shapes 2112x7168 --rotate-x 8 "$@" > "$OUT/$name.log" 2>&1
    echo "$name (carveout $cv) rc=$?"
    grep -E "PREQ M=.*(\+|only|in-kernel|auto)|rror|Traceback" "$OUT/$name.log" | head -n 20
}
C16=11011114,21011414,21011416
for cv in 10 60 100; do
    probe m16_cv$cv $cv --m 16 --gemv-codes $C16 --pair-codes $C16 --qmodes "" --kernel-codes "" --cuda-quant first:128
done
probe m9_cv60 60 --m 9 --gemv-codes "" --pair-codes 11011114,21011414,21011416 --qmodes "" --kernel-codes "" \
    --cuda-quant first:128
for m in 1 8; do
    probe m${m}_kernel -1 --m $m --gemv-codes "" --pair-codes "" --qmodes "" --kernel-codes 10011116,20011414,20011416
done
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
