#!/usr/bin/env bash
# Session 11: the full SASS of one wgmma W4A16 GEMM instance (bf16, 128 tokens, 5 stages) into
# $OUT/wgmma_sass.txt, to read its main loop on a machine without cuobjdump.
#   OUT=/some/dir bash benchmarks/gpu_s11sass.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s11sass
obj=$(find "$QLINEAR_BUILD_DIR" -name "w4a16_wgmma_launch*.o" | head -n 1)
cuobjdump -sass -fun "${SASS_FUN:-_ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li128ELi5EEEvNS0_10GemmParamsE}" "$obj" \
    > "$OUT/wgmma_sass.txt" 2>&1
echo "sass rc=$? lines=$(wc -l < "$OUT/wgmma_sass.txt")"
gpu_cleanup
