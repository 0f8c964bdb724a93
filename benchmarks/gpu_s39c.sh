#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 3 at 7d34645.
# Session 39 run 3: 128-row x 256-token CTAs over two K splits summed in pairs against 64-row x 256-token CTAs,
# both in grids of exactly 132 CTAs of the same work (2816x7168 M = 768, 1408x7168 M = 1536, 4224x7168
# M = 512), and 2112x7168 M = 1024's dispatch in the same run.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39c
for sm in 2816x7168:768 1408x7168:1536 4224x7168:512 2112x7168:1024; do
  gpu_probe "g${sm%%x*}" 120 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
      --shapes "${sm%%:*}" --ms "${sm##*:}" --layer sym-fp16 --rotate-x --tokens 999 \
      --wg-configs "256,1,3,0,64" "256,2,3,3,128"
done
gpu_cleanup
