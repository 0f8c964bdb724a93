#!/usr/bin/env bash
# Session 12: the FP8 decode GEMM with weights through a per-warp TMA ring (fp8_ring.cuh, B digit):
# its GPU tests, then probe_fp8_preq.py against the committed dispatch (CUDA register kernel on
# 2112x7168, Triton on the wide shapes) at M = 16 (quantizer + GEMV) and M = 1 / 8 (in-kernel x).
#   OUT=/some/dir bash benchmarks/gpu_s12ring.sh
# Ran once (session 12 run 1, b3cd356); the ring kernel was slower everywhere and was removed after it
# (benchmarks/results/session12/README.md), so this script needs that commit.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12ring
P="PREQ|rror"
gpu_probe r16 90 "$P" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 11011114,401011016,401011014,301011016,201011016 \
    --pair-codes 11011114,401011016,401011014,301011016,801011008,401021016,401012008,401022008
gpu_probe r8 70 "$P" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,400011016,300011016,200011016,400011012
gpu_probe rw16 120 "$P" benchmarks/probe_fp8_preq.py --m 16 --shapes 24576x1536,7168x16384 --gemv-codes "" --qmodes early \
    --kernel-codes "" --pair-codes 301011004,201011006,401011004,301011008,401012004,401011016,401021008,401041004,801041004,401022008,401042004
gpu_probe rw1 100 "$P" benchmarks/probe_fp8_preq.py --m 1 --shapes 24576x1536,7168x16384 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 300011004,400011004,400011008,200011008,400021008,400041004,800041004,401011016
gpu_pytest ring_tests 150 -x tests/gpu/test_fp8_cuda_gemv.py -k "ring or x_ahead"
gpu_cleanup
