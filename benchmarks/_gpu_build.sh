# Sourced by the per-family GPU scripts (benchmarks/gpu_*.sh): output folder, extension build folder
# (a caller's QLINEAR_BUILD_DIR is reused, else a fresh one that gpu_cleanup removes), a timed build,
# a pytest run summarized in two lines, and an Nsight Compute run summarized.
#   source "$(dirname "$0")/_gpu_build.sh"; gpu_build NAME   -> $build_rc, $build_s, $OUT/NAME_build.log
#   gpu_pytest NAME LIMIT PYTEST_ARGS...     -> $OUT/NAME.txt, prints "NAME rc=.. | <last line>" + failures
#   gpu_probe NAME LIMIT LINE_REGEX SCRIPT ARGS... -> $OUT/NAME/ (--out), $OUT/NAME.log, prints matching lines
#   gpu_probe_wg NAME LIMIT SHAPES "MS" LAYER CONFIG... -> gpu_probe of probe_w4a16_gemm.py --family wgmma, x rotated
#   gpu_probe_layers NAME LIMIT "MS" CONFIG... -> gpu_probe_wg NAME_<layer> on 2112x7168 for sym-fp16 and asym-bf16
#   gpu_bench_if_beats NAME WHAT LIMIT ROW CAND... -> bench_linear with the fastest CAND that beat ROW at M = 1024 in
#     both of gpu_probe_layers NAME's logs as the few row (benchmarks/probe_beats_row.py), if one did
#   gpu_ncu_bin                              -> the ncu command (empty without one)
#   gpu_ncu NAME LIMIT KERNEL_REGEX SCRIPT   -> $OUT/NAME.txt (ncu of SCRIPT's kernels), prints the key rows
#     ($NCU_EXTRA: more ncu arguments, e.g. "--section ComputeWorkloadAnalysis")
#   gpu_ncu_sass NAME LIMIT KERNEL_REGEX SCRIPT [ARGS...] -> one launch (after two) of SCRIPT's kernel profiled with
#     warp states, scheduler, source counters, instruction and memory tables ($NCU_EXTRA: more arguments) into
#     $OUT/NAME.ncu-rep, its details page NAME_details.txt, per-SASS page NAME_sass.csv ($NCU_RAW=1: raw metrics
#     NAME_raw.csv), the script's output NAME_run.txt; prints its check line and the key rows (gzip the csv after)
#   gpu_sass OBJECT_GLOB FUNCTION...         -> $OUT/FUNCTION.sass.gz (cuobjdump -sass of the built object)
#   gpu_run_start NAME                       -> a device run's start: its files under /tmp/NAME, tarred into the
#     device's $OUT as NAME.tgz on exit (whatever happens), PYTHONPATH, the build (the run stops if it fails).
#     The device returns at most 8 files from its $OUT ($DEST here), no deeper than $OUT/a/b/file: write the
#     files that must come back as such (an acceptance run's JSON + PNG) to $DEST and everything else under $OUT,
#     which the tarball carries (session 45 run 2 lost its acceptance files to A/B folders in $DEST).
#   gpu_bench_format FORMAT LIMIT           -> bench_linear --format FORMAT into $DEST/linear (log $OUT/bench_linear.log)
#   gpu_bench_linear TESTS LIMIT [TABLE CLASS MAX_M CONFIG] -> gpu_bench_format w4a16 if $OUT/TESTS.txt says the tests
#     passed; with the four arguments, one wgmma dispatch row replaced first (benchmarks/bench_linear_row.py)
#   gpu_test_suite PART                     -> every GPU test file through gpu_pytest: PART 1 the norm and FP8 files,
#     2 the W4A16 files and the streams test
#   gpu_probe_lib_start NAME / gpu_probe_lib_wait -> the W4A16 micro-benchmark library
#     (csrc/probe/w4a16_probe.cu) built in the background into $probe_so, log $OUT/NAME_probe_build.log
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
_own_build=0
if [ -z "${QLINEAR_BUILD_DIR:-}" ]; then QLINEAR_BUILD_DIR="$(mktemp -d)"; _own_build=1; fi
export QLINEAR_BUILD_DIR
t_all=$(date +%s)

gpu_build() {  # gpu_build NAME
    local log="$OUT/$1_build.log" t0
    echo "== build of the CUDA extension (cold unless the caller built it)"
    t0=$(date +%s.%N)
    python -c "from qlinear.kernels import cuda_ext; cuda_ext.load(verbose=True)" >"$log" 2>&1
    build_rc=$?
    build_s=$(python -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
    echo "build: rc=$build_rc, ${build_s} s (first-use budget 30 s); log in $log"
    [ "$build_rc" -ne 0 ] && tail -n 30 "$log"
    return 0
}

gpu_pytest() {  # gpu_pytest NAME LIMIT PYTEST_ARGS...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m pytest -q -p no:cacheprovider "$@" >"$OUT/$name.txt" 2>&1
    echo "$name rc=$? | $(tail -n 1 "$OUT/$name.txt")"
    grep -E "^(FAILED|ERROR)" "$OUT/$name.txt" | head -n 8
    return 0
}

gpu_probe() {  # gpu_probe NAME LIMIT LINE_REGEX SCRIPT [ARGS...]: python SCRIPT --out $OUT/NAME ARGS
    local name=$1 limit=$2 regex=$3; shift 3
    mkdir -p "$OUT/$name"
    local script=$1; shift
    timeout "$limit" python "$script" --out "$OUT/$name" "$@" 2>&1 | tee "$OUT/$name.log" | grep -E "$regex"
    return 0
}

gpu_probe_wg() {  # gpu_probe_wg NAME LIMIT SHAPES "MS" LAYER CONFIG...: probe_w4a16_gemm.py's wgmma family, x rotated
    local name=$1 limit=$2 shapes=$3 ms=$4 layer=$5; shift 5
    # shellcheck disable=SC2086  # MS is a list of M values
    gpu_probe "$name" "$limit" "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
        --shapes "$shapes" --ms $ms --layer "$layer" --rotate-x --tokens 999 --wg-configs "$@"
}

gpu_probe_layers() {  # gpu_probe_layers NAME LIMIT "MS" CONFIG...: gpu_probe_wg on 2112x7168, both layer kinds
    local name=$1 limit=$2 ms=$3 layer; shift 3
    for layer in sym-fp16 asym-bf16; do
        gpu_probe_wg "${name}_$layer" "$limit" 2112x7168 "$ms" "$layer" "$@"
    done
}

gpu_bench_if_beats() {  # gpu_bench_if_beats NAME WHAT LIMIT ROW CAND...: the fastest CAND that beat ROW at M = 1024
    # in both of gpu_probe_layers NAME's logs (benchmarks/probe_beats_row.py), if any, as the few row at M <= 1024 in
    # gpu_bench_linear (after the tests in $OUT/wg_tests.txt); WHAT names the candidates in the line printed
    local name=$1 what=$2 limit=$3 row=$4 choice c; shift 4
    local cands=()
    for c in "$@"; do cands+=(--cand "$c"); done
    choice=$(python benchmarks/probe_beats_row.py --m 1024 --shape 2112x7168 --row "$row" "${cands[@]}" \
        "$OUT/${name}_sym-fp16.log" "$OUT/${name}_asym-bf16.log")
    echo "$what config chosen for bench_linear: '${choice}'"
    [ -n "$choice" ] && gpu_bench_linear wg_tests "$limit" auto few 1024 "$choice"
    return 0
}

gpu_ncu_bin() {  # gpu_ncu_bin: the Nsight Compute command (on PATH, else the image's install), empty if none
    command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1
}

gpu_ncu() {  # gpu_ncu NAME LIMIT KERNEL_REGEX SCRIPT [ARGS...]
    local name=$1 limit=$2 regex=$3; shift 3
    local ncu
    ncu=$(gpu_ncu_bin)
    echo "ncu: ${ncu:-missing}"
    timeout "$limit" "$ncu" --clock-control none --target-processes all -k regex:"$regex" \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats \
        --section MemoryWorkloadAnalysis --section Occupancy ${NCU_EXTRA:-} \
        python "$@" > "$OUT/$name.txt" 2>&1
    echo "ncu rc=$?"
    grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|ERR|rror" \
        "$OUT/$name.txt" | cut -c1-150 | head -150
    return 0
}

gpu_ncu_sass() {  # gpu_ncu_sass NAME LIMIT KERNEL_REGEX SCRIPT [ARGS...]
    local name=$1 limit=$2 regex=$3; shift 3
    local ncu
    ncu=$(gpu_ncu_bin)
    # shellcheck disable=SC2086  # NCU_EXTRA is a list of arguments
    timeout "$limit" "$ncu" --clock-control none -k regex:"$regex" --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
        --section InstructionStats --section MemoryWorkloadAnalysis_Tables ${NCU_EXTRA:-} \
        -o "$OUT/$name" -f python "$@" > "$OUT/${name}_run.txt" 2>&1
    echo "$name ncu rc=$? | $(grep -E 'relative error|rror' "$OUT/${name}_run.txt" | head -n 2 | tr '\n' ' ')"
    "$ncu" -i "$OUT/$name.ncu-rep" --page details > "$OUT/${name}_details.txt" 2>&1
    [ "${NCU_RAW:-0}" = 1 ] && "$ncu" -i "$OUT/$name.ncu-rep" --page raw --csv > "$OUT/${name}_raw.csv" 2>&1
    "$ncu" -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/${name}_sass.csv" 2>&1
    echo "$name sass rows: $(wc -l < "$OUT/${name}_sass.csv")"
    grep -E "Duration|SM Frequency|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Stall|Executed Instructions |Tensor|Pipe" \
        "$OUT/${name}_details.txt" | cut -c1-140 | head -n 40
    return 0
}

gpu_sass() {  # gpu_sass OBJECT_GLOB FUNCTION...: each mangled FUNCTION of the extension object OBJECT_GLOB
    local obj f
    obj=$(find "$QLINEAR_BUILD_DIR" -name "$1" | head -n 1)
    shift
    echo "object: $obj"
    for f in "$@"; do
        cuobjdump -sass -fun "$f" "$obj" | gzip > "$OUT/$f.sass.gz"
        echo "$f: $(zcat "$OUT/$f.sass.gz" | wc -l) lines"
    done
    return 0
}

gpu_bench_format() {  # gpu_bench_format FORMAT LIMIT
    mkdir -p "$DEST/linear"
    timeout "$2" python benchmarks/bench_linear.py --format "$1" --out "$DEST/linear" 2>&1 \
        | tee "$OUT/bench_linear.log" | tail -n 30
    return 0
}

gpu_bench_linear() {  # gpu_bench_linear TESTS LIMIT [TABLE CLASS MAX_M CONFIG]
    local tests=$1 limit=$2; shift 2
    if ! grep -q " passed" "$OUT/$tests.txt" || grep -qE "failed|error" "$OUT/$tests.txt"; then
        echo "$tests did not pass: no bench_linear"
        return 0
    fi
    if [ $# -gt 0 ]; then
        mkdir -p "$DEST/linear"
        timeout "$limit" python benchmarks/bench_linear_row.py "$@" "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" \
            | tail -n 30
    else
        gpu_bench_format w4a16 "$limit"
    fi
    return 0
}

gpu_probe_lib_start() {  # gpu_probe_lib_start NAME: nvcc in the background (~10 s) while the extension builds
    probe_so="$QLINEAR_BUILD_DIR/w4a16_probe.so"
    probe_log="$OUT/$1_probe_build.log"
    ( nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -fPIC -shared \
        csrc/probe/w4a16_probe.cu -o "$probe_so" >"$probe_log" 2>&1 ) &
    probe_pid=$!
}

gpu_probe_lib_wait() {
    wait "$probe_pid"; echo "probe build rc=$? (log $probe_log)"
}

gpu_run_start() {  # gpu_run_start NAME
    local name=$1
    DEST=$OUT
    OUT=/tmp/$name
    export OUT
    rm -rf "$OUT" && mkdir -p "$OUT"
    export PYTHONPATH="${PYTHONPATH:-$PWD}"
    # shellcheck disable=SC2064  # the paths are fixed now
    trap "tar czf '$DEST/$name.tgz' -C '$OUT' ." EXIT
    gpu_build "$name"
    [ "$build_rc" -ne 0 ] && exit 1
    return 0
}

gpu_test_suite() {  # gpu_test_suite PART: every GPU test file, one pytest each with its own limit (gpu_pytest)
    if [ "$1" = 1 ]; then  # the norm and FP8 files
        gpu_pytest normquant 90 tests/gpu/test_norm_quant_cuda_gpu.py
        gpu_pytest norm_slices 60 tests/gpu/test_rms_norm_slices_gpu.py
        gpu_pytest mla_norm_quant 60 tests/gpu/test_mla_norm_quant_gpu.py
        gpu_pytest rms_norm 150 tests/gpu/test_rms_norm_gpu.py
        gpu_pytest fp8 200 tests/gpu/test_fp8_gpu.py
        gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py
        gpu_pytest fp8_swapab_tma_quantized 120 tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_fp8_tma_gpu.py \
            tests/gpu/test_fp8_quantized_gpu.py
    else  # the W4A16 files and the streams test
        gpu_pytest w4a16 240 tests/gpu/test_w4a16_gpu.py
        gpu_pytest w4a16_gemm 200 tests/gpu/test_w4a16_gemm_gpu.py
        gpu_pytest w4a16_cuda_fold 120 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
        gpu_pytest w4a16_tma_xs_sb_wgmma 200 tests/gpu/test_w4a16_tma_gpu.py tests/gpu/test_w4a16_xs_gpu.py \
            tests/gpu/test_w4a16_mma_sb_gpu.py tests/gpu/test_w4a16_wgmma_gpu.py
        gpu_pytest streams 60 tests/gpu/test_streams_gpu.py
    fi
    return 0
}

gpu_cleanup() {
    [ "$_own_build" = 1 ] && rm -rf "$QLINEAR_BUILD_DIR"
    return 0
}
