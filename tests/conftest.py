"""Suite-wide settings.

``tests/gpu/`` holds CUDA-only tests; on a machine without a GPU they are not collected at all
(rather than reported as hundreds of skips), so a CPU run's count is what actually ran.
"""

import torch

collect_ignore_glob = [] if torch.cuda.is_available() else ["gpu/*"]
