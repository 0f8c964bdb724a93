#!/usr/bin/env bash
# Session 19 run 5: the wgmma W4A16 GEMM with programmatic dependent launch (first weights before
# griddepcontrol.wait, the next grid let in at once): the GEMM GPU tests (PDL bit-equal, a PDL chain in a
# graph), then probe_w4a16_gemm.py --pdl-ab on the three shapes.
#   OUT=/some/dir bash benchmarks/gpu_s19pdl.sh   # ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe few 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --pdl-ab --ms 128 --shapes 2112x7168
gpu_probe short 150 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --pdl-ab --ms 128 256 1024 --shapes 24576x1536
gpu_probe many 150 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --pdl-ab --ms 64 128 1024 --shapes 7168x16384
gpu_cleanup
