"""Re-running a kernel test file under the Triton interpreter.

``TRITON_INTERPRET=1`` must be set before triton is imported and must not leak into other test
modules, so such a file's normal run is one driver test that re-runs the whole file in a
subprocess with the variable set; its kernel tests only run inside that subprocess.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def rerun_interpreted(test_file: str, extra_env: dict | None = None,
                      timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``pytest -q test_file`` in a subprocess with ``TRITON_INTERPRET=1`` (plus ``extra_env``)
    from the repository root, and assert that it passed (its output tail is the message)."""
    env = dict(os.environ, TRITON_INTERPRET="1", **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pathlib.Path(test_file).resolve())],
        env=env, capture_output=True, text=True, cwd=ROOT, timeout=timeout,
    )
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc
