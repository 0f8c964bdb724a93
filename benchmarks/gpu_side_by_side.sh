#!/usr/bin/env bash
# Builds of several commits compared in one device run, each in its own process on the same machine
# (how session 27 runs 6-7 told changes of under 1 % apart from run-to-run drift). Every verdict goes to
# a file as well as to stdout: the device tool returns only the last 12,000 characters of the output
# (session 27 run 7 lost a test line that way) and only a few files, so everything is written under
# $WORK and packed after each phase into $OUT/side_by_side.tgz, next to a copy of $OUT/summary.txt.
#   VARIANTS="A=../snapA B=." TESTS='tests/gpu/test_w4a16_gemm_gpu.py -k "auto or graph"' \
#   BENCH="benchmarks/bench_linear.py --format w4a16 --ms 128 1024" PASSES=2 OUT=/dir \
#   bash benchmarks/gpu_side_by_side.sh
# VARIANTS: NAME=FOLDER pairs (snapshots from benchmarks/snapshot.sh REV build/snapX; "." = this one),
# built in parallel, each into /tmp/qb_NAME. TESTS (optional): pytest arguments, shell-quoted, run on
# every variant but the first (the baseline) -> tests_NAME.txt. BENCH (optional): a script and its
# arguments, run PASSES times per variant, variants alternating within a pass, each with --out
# NAME_PASS -> NAME_PASS.log. summary.txt collects the build and test verdicts and every bench line
# matching $BENCH_LINES (and errors).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-benchmarks/results}
W=${WORK:-/tmp/side_by_side}
rm -rf "$W" && mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1
here=$PWD
summary="$W/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
pack() { cp "$summary" "$OUT/summary.txt"; tar czf "$OUT/side_by_side.tgz" -C "$W" . 2>/dev/null; }
declare -a names=()
declare -A dirs=()
for pair in ${VARIANTS:?VARIANTS=\"NAME=FOLDER ...\" is required}; do
    name=${pair%%=*}
    dir=${pair#*=}
    [ "$dir" = "." ] && dir=$here
    names+=("$name")
    dirs[$name]=$(cd "$dir" && pwd)
done
for v in "${names[@]}"; do
    (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD python -c \
        "from qlinear.kernels import cuda_ext; cuda_ext.load()" > "$W/build_$v.log" 2>&1
     rc=$?
     echo "build $v ($(cat GIT_COMMIT 2>/dev/null || echo '?')): rc=$rc$([ $rc -ne 0 ] && echo " | $(tail -n 1 "$W/build_$v.log")")" \
        | tee -a "$summary") &
done
wait
pack
if [ -n "${TESTS:-}" ]; then
    for v in "${names[@]:1}"; do
        (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD timeout "${TEST_LIMIT:-200}" \
            bash -c "python -m pytest -q -p no:cacheprovider $TESTS" > "$W/tests_$v.txt" 2>&1)
        say "tests $v: $(tail -n 1 "$W/tests_$v.txt")"
        grep -E "^(FAILED|ERROR)" "$W/tests_$v.txt" | head -n 5 | tee -a "$summary"
        pack
    done
fi
if [ -n "${BENCH:-}" ]; then
    for pass in $(seq 1 "${PASSES:-2}"); do
        for v in "${names[@]}"; do
            (cd "${dirs[$v]}" && QLINEAR_BUILD_DIR=/tmp/qb_$v PYTHONPATH=$PWD timeout "${BENCH_LIMIT:-200}" \
                python $BENCH --out "$W/${v}_$pass" > "$W/${v}_$pass.log" 2>&1)
            grep -E "${BENCH_LINES:-qlinear w4a16|qlinear fp8|^GEMM M}|rror|Traceback" "$W/${v}_$pass.log" | \
                sed "s/^/$v$pass /" | cut -c1-"${LINE_WIDTH:-150}" | tee -a "$summary"
            pack
        done
    done
fi
exit 0
