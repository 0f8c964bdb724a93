#!/usr/bin/env bash
# GPU tests of every kernel family, one pytest per file with its own timeout (the part's log shows
# progress and failures as they happen; junit XML per file in $OUT).
#   OUT=/some/dir bash benchmarks/gpu_verify.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/qlinear_verify}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rc_all=0
t() {  # t NAME TIMEOUT PYTEST-ARGS...   (ONLY="name ..." runs those files alone)
    local name=$1 limit=$2; shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
    local t0=$(date +%s)
    timeout "$limit" python -m pytest -q -p no:cacheprovider -rf --junitxml="$OUT/$name.xml" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    rc_all=$((rc_all | rc))
    echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s | $(grep -E '(passed|failed|error)' "$OUT/$name.txt" | tail -n 1)"
    grep -E "^FAILED|^ERROR" "$OUT/$name.txt" | head -n 8
}
t normquant_cuda 60 tests/gpu/test_norm_quant_cuda_gpu.py
[ -f tests/gpu/test_rms_norm_slices_gpu.py ] && t norm_slices 60 tests/gpu/test_rms_norm_slices_gpu.py
t rms_norm_cuda 90 tests/gpu/test_rms_norm_gpu.py -k "not triton"
# QUICK=1: the FP8 / W4A16 files' graph-capture, small-M and dispatch tests only
if [ "${QUICK:-0}" = 1 ]; then k_fp8=(-k "cuda_graph or small_m or ragged or auto_backend"); k_w4=(-k "cuda_graph or backend_choice or w8a16"); else k_fp8=(); k_w4=(); fi
t fp8 150 tests/gpu/test_fp8_gpu.py "${k_fp8[@]}"
t w4a16_mma_sb 60 tests/gpu/test_w4a16_mma_sb_gpu.py
t w4a16 150 tests/gpu/test_w4a16_gpu.py "${k_w4[@]}"
t streams 60 tests/gpu/test_streams_gpu.py
exit $rc_all
