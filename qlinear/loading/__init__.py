"""Checkpoint loading: safetensors files -> the parameters of qlinear layers (or any module).

``load_checkpoint(model, path, fused_modules=..., strict=True)`` streams a safetensors file or
sharded directory into a model, validating everything it can before changing anything, and
finishes every layer; ``read_quantization_config(path)`` reads ``config.json``;
``save_checkpoint(tensors, path)`` writes single or sharded checkpoints (tests, selfcheck).
``safetensors`` and ``tqdm`` load only when a function here needs them.
"""

from qlinear.loading.checkpoint import PROGRESS_MIN_BYTES, load_checkpoint
from qlinear.loading.mapping import check_tensor, dtype_accepted
from qlinear.loading.report import CheckpointError, FileStats, LoadReport, TensorLoad
from qlinear.loading.safetensors_io import read_header, read_quantization_config, resolve_checkpoint, save_checkpoint

__all__ = [
    "load_checkpoint",
    "read_quantization_config",
    "save_checkpoint",
    "read_header",
    "resolve_checkpoint",
    "dtype_accepted",
    "check_tensor",
    "LoadReport",
    "TensorLoad",
    "FileStats",
    "CheckpointError",
    "PROGRESS_MIN_BYTES",
]
