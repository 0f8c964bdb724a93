#!/usr/bin/env bash
# Session 15 run 8: the wgmma W4A16 GEMM (ad5edcd's kernel) at M = 128, the 128-token tile with 4 and 5
# stages and a few K splits, on the symmetric fp16-scale layer, against the automatic config and bf16:
# is there a config the dispatch table should pin (_CUDA_WGMMA_AUTO)?
#   OUT=/some/dir bash benchmarks/gpu_s15h.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15h
P="--family wgmma --tokens 128 --layer sym-fp16 --ms 128"
gpu_probe many 80 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384 --splits 0 2 3
gpu_probe few 80 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 2112x7168 --splits 0 5 6 8
gpu_probe short 60 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 24576x1536 --splits 0 2
grep -hE "^GEMM M=" "$OUT"/many.log "$OUT"/few.log "$OUT"/short.log | cut -c1-90
gpu_cleanup
