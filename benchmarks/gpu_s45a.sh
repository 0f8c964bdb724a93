#!/usr/bin/env bash
# RECORD ONLY: ran in session 45 run 1 at 87ea1cc (the wide config is committed since: qlinear/ops/w4a16.py _CUDA_WGMMA_WIDE).
# Session 45 run 1: 192-row x 176-token wgmma CTAs (codes 32223 / 32224: one A buffer; 42223 / 42224: A double-buffered
# over half superblocks) with two K splits summed in pairs: 2112x7168 at M = 1024 as 11 x 6 x 2 = 132 CTAs, each
# moving 2.9x fewer x bytes into shared memory than the few row's 64-row CTAs. The wgmma GPU tests (the new codes in
# every-config and the pair reduction), the candidates against the few row at M = 768 / 1024 on both layer kinds
# (x rotated), then bench_linear with the fastest one that beat the row in both, if any.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s45a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s45a
gpu_pytest wg_tests 240 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
ROW=256,0,3,0,64
CANDS=(176,2,3,3,192,3 176,2,3,3,192,4 176,2,4,3,192,3 176,2,4,3,192,4)
gpu_probe_layers cand 150 "768 1024" "$ROW" "${CANDS[@]}"
gpu_bench_if_beats cand "192x176" 260 "$ROW" "${CANDS[@]}"
gpu_cleanup
