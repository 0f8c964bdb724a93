#!/usr/bin/env bash
# Session 15: the SASS of the wgmma W4A16 GEMM's 128- and 256-token bf16 instances as built now
# (cuobjdump on the device machine; this machine has none), gzipped into $OUT, to count the
# instructions of one superblock of the main loop.
#   OUT=/some/dir bash benchmarks/gpu_s15d.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s15d
gpu_sass "w4a16_wgmma_launch*.o" _ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li128ELi4EEEvNS0_8WgParamsE \
    _ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li256ELi3EEEvNS0_8WgParamsE
gpu_cleanup
