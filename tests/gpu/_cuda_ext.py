"""The CUDA extension in GPU tests: on a machine with a GPU, an extension that does not build or load fails the
test that needs it (a skip would let a GPU run pass without the product's kernels)."""

import pytest


def cuda_ext_ops():
    """``torch.ops.qlinear_C`` (built on first use), or a test failure that names why it is unavailable."""
    from qlinear.kernels import cuda_ext

    if not cuda_ext.is_available():
        pytest.fail(f"CUDA extension unavailable: {cuda_ext.failure_reason()}")
    return cuda_ext.load()
