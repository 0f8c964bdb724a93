"""Opcode histogram of the kernels in an object file or shared library whose mangled name matches a
regex (cuobjdump -sass on the device machine: this machine has no cuobjdump). One block per
kernel: instruction count, then the opcodes by count.

    python benchmarks/sass_hist.py FILE REGEX [--top 40]
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("regex")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    text = subprocess.run([tool, "-sass", args.file], capture_output=True, text=True, check=True).stdout
    name, counts = None, collections.Counter()
    blocks = []
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name is not None:
                blocks.append((name, counts))
            name, counts = m.group(1), collections.Counter()
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and name is not None:
            counts[m.group(2).split(".")[0]] += 1
    if name is not None:
        blocks.append((name, counts))
    for name, counts in blocks:
        if not re.search(args.regex, name):
            continue
        print(f"SASS {name}: {sum(counts.values())} instructions")
        print("SASS   " + "  ".join(f"{op} {n}" for op, n in counts.most_common(args.top)))


if __name__ == "__main__":
    main()
