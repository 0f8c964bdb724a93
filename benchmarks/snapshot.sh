#!/usr/bin/env bash
# A clean copy of a commit for the device tool (carry the folder, e.g. "build/snap"): git archive into
# the folder plus a GIT_COMMIT file, which benchmarks/_timing.py's env_info reports as the results'
# commit (inside the copy, git rev-parse would name the enclosing checkout's HEAD).
#   bash benchmarks/snapshot.sh [REV [FOLDER]]   (defaults: HEAD, build/snap)
#   bash benchmarks/snapshot.sh && <device run: cd build/snap && ...>
#   bash benchmarks/snapshot.sh some-branch build/snapB   (a second build for benchmarks/gpu_side_by_side.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
dir=${2:-build/snap}
case "$dir" in build/*) ;; *) echo "snapshot.sh: FOLDER must be under build/ (ignored by git), got $dir" >&2; exit 2 ;; esac
rm -rf "$dir" && mkdir -p "$dir"
# without the committed results (the device tool takes at most 64 MiB with the working tree)
git archive "$rev" -- . ':(exclude)benchmarks/results' | tar -x -C "$dir"
git rev-parse "$rev" > "$dir/GIT_COMMIT"
echo "$dir at $(cat "$dir/GIT_COMMIT")"
