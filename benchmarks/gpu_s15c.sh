#!/usr/bin/env bash
# Needs commit 01f237e (stream-K beside the grid kernel; reverted after this run, session 15 run 3).
# Session 15 run 3: the wgmma W4A16 GEMM with stream-K beside the grid kernel (a launch of one CTA per
# (tile, split) runs the grid kernel, the one before stream-K; other CTA counts the stream-K kernel,
# 64 / 128 tokens). Its GPU tests, then probe_w4a16_gemm.py on the symmetric fp16-scale layer: per
# case the grid kernel's classic split, the stream-K kernel at about the same CTAs (its cost per
# superblock against the grid kernel's) and at one wave of 132 CTAs, against the new automatic
# choice and bf16; then the whole layer (bench_linear) at the M the wgmma GEMM takes.
#   OUT=/some/dir bash benchmarks/gpu_s15c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15c
gpu_pytest gemm_tests ${GT_LIMIT:-240} tests/gpu/test_w4a16_gemm_gpu.py
P="--family wgmma --tokens 999 --layer sym-fp16"
gpu_probe many 120 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384 --ms 64 128 \
    --wg-configs 64,2,8 64,0,8,113 64,0,8,132 128,2,4 128,0,4,113 128,0,4,132
gpu_probe many512 60 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384 --ms 256 512 \
    --wg-configs 128,0,4,132 256,1,3
gpu_probe few 90 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 2112x7168 --ms 64 128 \
    --wg-configs 64,7,8 64,0,8,120 64,0,8,132 128,7,4 128,0,4,120 128,0,4,132
gpu_probe short 90 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 24576x1536 --ms 64 128 256 \
    --wg-configs 64,1,8 64,0,8,132 128,1,4 128,0,4,132 128,0,4,264
grep -hE "^GEMM M=" "$OUT"/many.log "$OUT"/many512.log "$OUT"/few.log "$OUT"/short.log | cut -c1-90
timeout ${W4_LIMIT:-120} python benchmarks/bench_linear.py --format w4a16 --ms 64 128 --out "$OUT/linear" 2>&1 | tail -n 7
gpu_cleanup
