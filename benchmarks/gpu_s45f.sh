#!/usr/bin/env bash
# RECORD ONLY: ran in session 45 run 6 at 1f7b768.
# Session 45 run 6: after the final reading's mend (csrc/w4a16_wgmma.cuh: one superblock entry and one stage release
# shared by the three A-fragment schemes; the 22 earlier instances' PTX unchanged, the 176-token ones reordered):
# the wgmma GPU tests, then the wide config and the few row at M = 1024 on both layer kinds (probe, as run 4).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s45f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s45f
gpu_pytest wg_tests 240 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe_layers mend 120 "1024" 256,0,3,0,64 176,2,4,3,192,4
gpu_cleanup
