"""Run a benchmark script with module attributes of qlinear set first, in the same process: what committing those
values would give, measured before they are committed.

    python benchmarks/with_setting.py qlinear.ops.fp8:FP8_CUDA_QUANTIZER='cuda' [MOD:ATTR=VALUE ...] -- SCRIPT [args...]

VALUE is a Python literal (ast.literal_eval); the attribute must exist (a typo would otherwise measure the default).
"""

from __future__ import annotations

import ast
import importlib
import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        sys.exit(__doc__)
    cut = argv.index("--")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    for item in argv[:cut]:
        target, _, literal = item.partition("=")
        mod_name, _, attr = target.partition(":")
        if not (mod_name and attr and literal):
            sys.exit(f"expected MOD:ATTR=VALUE, got {item!r}")
        mod = importlib.import_module(mod_name)
        if not hasattr(mod, attr):
            sys.exit(f"{mod_name} has no attribute {attr!r}")
        setattr(mod, attr, ast.literal_eval(literal))
        print(f"{mod_name}.{attr} = {getattr(mod, attr)!r}", flush=True)
    script = argv[cut + 1]
    sys.argv = [script, *argv[cut + 2:]]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
