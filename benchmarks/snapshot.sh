#!/usr/bin/env bash
# A clean copy of HEAD for the device tool (carry it as "build/snap"): git archive into build/snap
# plus a GIT_COMMIT file, which benchmarks/_timing.py's env_info reports as the results' commit (inside
# the copy, git rev-parse would name the enclosing checkout's HEAD).
#   bash benchmarks/snapshot.sh && <device run: cd build/snap && ...>
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/snap && mkdir -p build/snap
# without the committed results (the device tool takes at most 64 MiB with the working tree)
git archive HEAD -- . ':(exclude)benchmarks/results' | tar -x -C build/snap
git rev-parse HEAD > build/snap/GIT_COMMIT
echo "build/snap at $(cat build/snap/GIT_COMMIT)"
