"""Programmatic dependent launch (PDL, sm_90+) for the Triton kernels.

At decode sizes a kernel runs for a few microseconds and the gap between two launches in a
stream (or a CUDA graph) is a large share of a layer's time. Launched with PDL, a kernel may be
scheduled while the previous one is still running; it then waits in ``griddepcontrol.wait``,
which returns once every prerequisite grid has completed and its memory is visible, before
touching any memory. So the results never depend on PDL: only the launch latency is hidden.
Each kernel also signals ``griddepcontrol.launch_dependents`` right after its wait, letting the
next PDL launch be scheduled early.

``QLINEAR_PDL=0`` turns it off (read at each launch, so benchmarks can compare both).
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

__all__ = ["pdl_enabled", "launch_options", "pdl_prologue"]


@functools.lru_cache(maxsize=None)
def _sm90_or_newer(device_index: int) -> bool:
    return torch.cuda.get_device_capability(device_index) >= (9, 0)


def pdl_enabled(device: torch.device) -> bool:
    """True on CUDA devices of compute capability >= 9.0 unless ``QLINEAR_PDL=0``."""
    if device.type != "cuda" or os.environ.get("QLINEAR_PDL", "1") == "0":
        return False
    return _sm90_or_newer(device.index if device.index is not None else torch.cuda.current_device())


def launch_options(device: torch.device) -> dict:
    """Keyword arguments for ``kernel[grid](...)``: the ``USE_PDL`` constexpr every PDL-aware
    kernel takes, plus Triton's ``launch_pdl`` launch option when it is on (never passed to the
    CPU interpreter)."""
    if pdl_enabled(device):
        return {"USE_PDL": True, "launch_pdl": True}
    return {"USE_PDL": False}


@triton.jit
def pdl_prologue(USE_PDL: tl.constexpr):
    """First statement of a PDL-aware kernel: wait for the previous grid, then let the next one
    be scheduled. No-op (nothing traced) when ``USE_PDL`` is False."""
    if USE_PDL:
        tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
        tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)
