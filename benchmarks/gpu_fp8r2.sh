#!/usr/bin/env bash
# FP8 decode configs (issue 4): two 16-row tiles per CTA sharing x (R = 2: half the x reads of R = 1)
# at M = 16 on 2112x7168 and 7168x16384, register-kernel configs at M = 4 on 2112x7168 (the merged /
# separate ratio), then bench_linear --format fp8-block at M = 4 / 16 / 4096 with the interleaved timing.
#   OUT=/some/dir bash benchmarks/gpu_fp8r2.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8r2
gpu_probe r16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 1011114,1022108,1022208,1022107,1012108,1042104 \
    --pair-codes 1011114,1022108,1022208,1022107,1022106,1012108,1042104
gpu_probe r4 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 4 --shapes 2112x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 11116,11114,11115,11216,11316,21108,21116,22108,12112,22112,22110
gpu_probe rw 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 7168x16384 --gemv-codes "" --qmodes early --kernel-codes "" \
    --pair-codes 1042108,1082108,1022108,1041116,1081108,1042208
timeout 200 python benchmarks/bench_linear.py --format fp8-block --ms 4 16 4096 --out "$OUT" 2>&1 | tail -n 9
gpu_cleanup
