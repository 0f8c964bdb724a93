#!/usr/bin/env bash
# W4A16 GPU tests after a change to the CUDA decode kernels: the kernel tests (every compiled code,
# the dispatch tables, the fold), then the GPTQ / AWQ formats through the layers.
#   OUT=/some/dir bash benchmarks/gpu_w4check.sh   # <= ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4check
for spec in "cuda:60:tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py" \
            "gptq:60:-m gpu tests/quantization/test_gptq_format.py" "awq:60:-m gpu tests/quantization/test_awq_format.py"; do
    name=${spec%%:*}; rest=${spec#*:}; limit=${rest%%:*}; args=${rest#*:}
    # shellcheck disable=SC2086
    timeout "$limit" python -m pytest -q -p no:cacheprovider $args >"$OUT/w4check_$name.txt" 2>&1
    echo "$name rc=$? | $(tail -n 1 "$OUT/w4check_$name.txt")"
    grep -E "^(FAILED|ERROR)" "$OUT/w4check_$name.txt" | head -n 5
done
gpu_cleanup
