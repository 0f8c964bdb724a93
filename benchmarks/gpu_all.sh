#!/usr/bin/env bash
# Everything that needs the GPU, in one command on the device machine:
#   STAGES="norm fp8 w4a16 formats linear mla" bash benchmarks/gpu_all.sh
# Each stage writes into $R/<stage>/ and a log; at the end everything is packed into
# $OUT/gpu_results.tgz (the device tool returns at most 8 files) and a summary is printed.
# "build" times a cold build of the CUDA extension into QLINEAR_BUILD_DIR, which every later stage
# reuses; any other NAME runs benchmarks/gpu_NAME.sh under the timeout $T_NAME (default 150 s),
# e.g. STAGES="build verify normquant" QUICK=1 bash benchmarks/gpu_all.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
R=${R:-/tmp/qlinear_gpu}
rm -rf "$R"; mkdir -p "$R"
OUT=${OUT:-benchmarks/results}
STAGES=${STAGES:-"norm fp8 w4a16 formats linear mla"}
export QLINEAR_BUILD_DIR=${QLINEAR_BUILD_DIR:-$R/ext_build}
t_all=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$R/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)" | tee -a "$R/gpu.txt"

stage() {  # stage NAME TIMEOUT CMD...
    local name=$1 limit=$2; shift 2
    mkdir -p "$R/$name" "$OUT"
    local t0=$(date +%s)
    OUT="$R/$name" timeout "$limit" "$@" >"$R/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc=$rc in $(( $(date +%s) - t0 )) s"
    echo "$name rc=$rc" >>"$R/status.txt"
    # packed after every stage: a run cut short by the device's time limit still returns what finished
    tar czf "$OUT/gpu_results.tgz" --exclude=ext_build -C "$R" . 2>/dev/null
}

for s in $STAGES; do
    case $s in
        normtune) stage normtune ${NORM_T:-240} bash -c 'timeout 120 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py; a=$?; python benchmarks/bench_rms_norm.py --focus tune --out $OUT; b=$?; echo "tests=$a tune=$b"; exit $((a|b))' ;;
        fp8tests) stage fp8tests ${FP8T_T:-150} python -m pytest -q -p no:cacheprovider -rA tests/gpu/test_fp8_gpu.py -k "quant_bit_exact or not quant_bit_exact" ;;
        w4tests) stage w4tests ${W4T_T:-90} python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_gpu.py -k "cuda_graph or backend_choice or dequantize_versions or compile" ;;
        normbench) stage normbench ${NB_T:-120} python benchmarks/bench_rms_norm.py --out "$R/normbench" ;;
        norm)    stage norm ${NORM_T:-240} bash benchmarks/gpu_norm.sh ;;
        fp8)     stage fp8 ${FP8_T:-300} bash benchmarks/gpu_fp8.sh ;;
        w4a16)   stage w4a16 ${W4A16_T:-300} bash benchmarks/gpu_w4a16.sh ;;
        formats) stage formats ${FMT_T:-240} bash -c '
            QLINEAR_GPU_RESULTS=$OUT/fp8_format_gpu.json python -m pytest -q -p no:cacheprovider -m gpu tests/quantization/test_fp8_format.py; a=$?
            QLINEAR_GPU_RESULTS=$OUT/gptq_gpu.json python -m pytest -q -p no:cacheprovider -m gpu tests/quantization/test_gptq_format.py; b=$?
            QLINEAR_GPU_RESULTS=$OUT/awq_gpu.json python -m pytest -q -p no:cacheprovider -m gpu tests/quantization/test_awq_format.py; c=$?
            QLINEAR_CT_FIXTURES=build/ct_fixtures QLINEAR_GPU_RESULTS=$OUT/ct_gpu.json python -m pytest -q -p no:cacheprovider -m gpu tests/quantization/test_compressed_tensors_format.py; d=$?
            python -m qlinear selfcheck --device cuda --json $OUT/selfcheck_gpu.json; e=$?
            echo "fp8=$a gptq=$b awq=$c ct=$d selfcheck=$e"; exit $((a|b|c|d|e))' ;;
        linear)  stage linear ${LIN_T:-300} bash -c 'python benchmarks/bench_linear.py --format fp8-block --out $OUT ${LINEAR_ARGS:-}; a=$?; python benchmarks/bench_linear.py --format w4a16 --out $OUT ${LINEAR_ARGS:-}; b=$?; exit $((a|b))' ;;
        mla)     stage mla ${MLA_T:-240} python benchmarks/bench_mla.py --out "$R/mla" ;;
        streams) stage streams 120 python -m pytest -q -p no:cacheprovider tests/gpu/test_streams_gpu.py ;;
        build)   stage build ${BUILD_T:-120} python -c "
import time; t = time.time()
from qlinear.kernels import cuda_ext
cuda_ext.load(verbose=True)
print(f'first build {time.time() - t:.1f} s')" ;;
        *)       stage "$s" "$(eval echo \${T_$s:-150})" bash "benchmarks/gpu_$s.sh" ;;
    esac
done
tar czf "$OUT/gpu_results.tgz" --exclude=ext_build -C "$R" .
echo
echo "================ summary ($(( $(date +%s) - t_all )) s) ================"
cat "$R/status.txt"
for s in $STAGES; do
    echo "---- $s (tail)"
    grep -vE "^\s*$" "$R/$s.log" | tail -n "${TAIL:-14}" | cut -c1-220
done
