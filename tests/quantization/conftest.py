"""Shared fixture of the format GPU tests."""

import json
import os

import pytest
import torch


@pytest.fixture(scope="module")
def gpu_results():
    """Rows a GPU test module records (backend, error per case); written at the module's end to
    the JSON file named by ``QLINEAR_GPU_RESULTS``, when set."""
    rows: list[dict] = []
    yield rows
    path = os.environ.get("QLINEAR_GPU_RESULTS")
    if path and rows:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}, f, indent=1)
