#!/usr/bin/env bash
# Needs commit 616e9f4 (reverted after this run: 623 SASS instructions per two superblocks against
# 635, but slower against bf16 in the same run: 7168x16384 M = 128 1.029x against run 6's 1.012x).
# Session 15 run 7: the wgmma W4A16 GEMM with the ring address and the lane's stage offset pinned in
# registers (explicit ld.shared), on top of run 5's changes. The CUDA W4A16 GEMM GPU tests, the SASS
# of the 128-token bf16 instance, the probe at M = 64 / 128 / 1024 (automatic config, symmetric
# fp16-scale layer), then the issue-5 acceptance benchmark (bench_linear --format w4a16, every M).
#   OUT=/some/dir bash benchmarks/gpu_s15g.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15g
gpu_pytest gemm_tests ${GT_LIMIT:-240} tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py
obj=$(find "$QLINEAR_BUILD_DIR" -name "w4a16_wgmma_launch*.o" | head -n 1)
f=_ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li128ELi4EEEvNS0_8WgParamsE
cuobjdump -sass -fun "$f" "$obj" | gzip > "$OUT/$f.sass.gz"
P="--family wgmma --tokens 999 --layer sym-fp16"
gpu_probe wg 150 "BEST|rror" benchmarks/probe_w4a16_gemm.py $P --shapes 7168x16384,2112x7168,24576x1536 --ms 64 128 1024
grep -hE "^GEMM M=" "$OUT"/wg.log | cut -c1-90
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 --out "$OUT/linear" 2>&1 | tail -n 30
gpu_cleanup
