"""Suite-wide settings.

``tests/gpu/`` holds CUDA-only tests; on a machine without a GPU they are not collected at all
(rather than reported as hundreds of skips), so a CPU run's count is what actually ran.

Without a GPU the Triton interpreter is switched on here, before any test module is collected:
``TRITON_INTERPRET=1`` only takes effect if it is set before triton is first imported, and the
kernel test files choose at import between running their tests in this process and re-running
themselves in an interpreted subprocess. Left to the test files, that choice depended on the order
of collection: one earlier file importing triton turned 120 in-process kernel tests into skips
(session 21).
"""

import os
import sys

import torch

collect_ignore_glob = [] if torch.cuda.is_available() else ["gpu/*"]

if not torch.cuda.is_available() and "triton" not in sys.modules:
    os.environ.setdefault("TRITON_INTERPRET", "1")
