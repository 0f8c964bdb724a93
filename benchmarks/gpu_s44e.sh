#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 5 at b2347ac.
# Session 44 run 5: after the final reading's mends and the tests/gpu helper (_cuda_ext.cuda_ext_ops in eight
# files): every GPU test file collects; the first four tests of each file that changed; the quantizer's file
# whole (with the eager / captured test).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44e
timeout 120 python -m pytest -q -p no:cacheprovider --co tests/gpu > "$OUT/collect.txt" 2>&1
echo "collect rc=$? | $(tail -n 1 "$OUT/collect.txt")"
grep -E "rror" "$OUT/collect.txt" | head -n 8
for f in test_fp8_cuda_gemv test_fp8_tma_gpu test_mla_norm_quant_gpu test_norm_quant_cuda_gpu test_rms_norm_gpu \
         test_rms_norm_slices_gpu test_w4a16_gemm_gpu; do
    ids=$(grep "^tests/gpu/$f.py::" "$OUT/collect.txt" | head -n 4)
    # shellcheck disable=SC2086  # ids is a list of test ids
    gpu_pytest "first4_$f" 240 $ids
done
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py
echo "run: $(( $(date +%s) - t_all )) s"
