#!/usr/bin/env bash
# Session 18 run 7: the FP8 Triton GEMM's own PDL trigger (QLINEAR_PDL=early: right after its wait,
# so the next quantizer's programs are resident before the GEMM ends) on 7168x16384 / 24576x1536 at
# M = 4 / 8 / 16: probe_fp8_mgrow.py under QLINEAR_PDL=early against the default run of the same
# probe, then bench_linear --format fp8-block --ms 4 16 --pdl-ab (the layers also timed with PDL
# off / early). Triton only: no build.
#   OUT=/some/dir bash benchmarks/gpu_s18pdl.sh   # ~200 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe late 100 "MGROW|rror" benchmarks/probe_fp8_mgrow.py --ms 4 16 --shapes 7168x16384,24576x1536
( export QLINEAR_PDL=early; gpu_probe early 100 "MGROW|rror" benchmarks/probe_fp8_mgrow.py --ms 4 16 --shapes 7168x16384,24576x1536 )
timeout 200 python benchmarks/bench_linear.py --format fp8-block --ms 4 16 --pdl-ab --out "$OUT" 2>&1 | tail -n 12
gpu_cleanup
