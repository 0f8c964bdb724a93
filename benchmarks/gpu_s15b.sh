#!/usr/bin/env bash
# Run 2 of session 15 measured commit acb43d5, where every wgmma config (64 / 128 tokens) ran the
# stream-K kernel; later in the session the classic splits run the grid kernel again (gpu_s15c.sh).
# Session 15: the wgmma W4A16 GEMM on a stream-K schedule (each of G CTAs takes an equal share of all
# output tiles' superblocks). Its GPU tests (every test of the CUDA W4A16 GEMMs, the new stream-K
# CTA counts included), then probe_w4a16_gemm.py on the symmetric fp16-scale layer: the launcher's
# new automatic config against the classic K split that was its choice before (explicit) and one
# stream-K wave (132 CTAs; the 256-token instance stays on the classic grid), then the whole layer (bench_linear) at the M the wgmma GEMM takes.
#   OUT=/some/dir bash benchmarks/gpu_s15b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15b
gpu_pytest gemm_tests ${GT_LIMIT:-240} tests/gpu/test_w4a16_gemm_gpu.py
P="--family wgmma --tokens 999 --layer sym-fp16"
gpu_probe many 120 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384 --ms 64 128 512 1024 \
    --wg-configs 64,2,8,0 64,0,8,132 128,2,4,0 128,0,4,132 256,1,3,0
gpu_probe few 90 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 2112x7168 --ms 128 512 1024 \
    --wg-configs 128,7,4,0 128,0,4,132 256,3,3,0
gpu_probe short 90 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 24576x1536 --ms 128 512 1024 \
    --wg-configs 128,1,4,0 128,0,4,132 256,1,3,0
grep -hE "^GEMM M=" "$OUT"/many.log "$OUT"/few.log "$OUT"/short.log | cut -c1-90
timeout ${W4_LIMIT:-120} python benchmarks/bench_linear.py --format w4a16 --ms 64 128 1024 --out "$OUT/linear" 2>&1 | tail -n 9
gpu_cleanup
