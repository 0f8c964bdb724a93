"""Programmatic dependent launch (PDL, sm_90+) for the Triton kernels.

At decode sizes a kernel runs for a few microseconds and the gap between two launches in a
stream (or a CUDA graph) is a large share of a layer's time. Launched with PDL, a kernel may be
scheduled while the previous one is still running; it then waits in ``griddepcontrol.wait``,
which returns once every prerequisite grid has completed and its memory is visible, before
touching any memory. So the results never depend on PDL: only the launch latency is hidden.
Each kernel then signals ``griddepcontrol.launch_dependents`` so the next PDL launch can be
scheduled: "late" (the default) after its main loop, "early" right after the wait. Early helped
at M = 1 on the H200 but cost up to 40 % at M = 16 (W4A16 24576x1536: 26.0 vs 18.2 us with PDL
off, benchmarks/results/session2/): the next grid's programs, resident and waiting, compete
with the running one.

``QLINEAR_PDL``: ``0`` off, ``early``, or ``late`` / unset (read at each launch, so benchmarks
can compare them in one process). A launch may also ask for ``first``: the trigger *before* the
wait. The next grid is then scheduled while this one still waits for its own predecessor, so its
programs can take SMs (and start work that needs no earlier result, e.g. weight loads) the moment
the predecessor's programs leave. Ordering still holds transitively: the next grid's wait returns
only when this grid has completed, and this grid completes only after its own wait returned.
No dispatch table uses "first": for the quantizer of the FP8 quantize-then-GEMM pairs (session 21
run 1, benchmarks/results/session21/run1, probe_fp8_preq.py, us, first vs early) it moved the CUDA
pair on 2112x7168 at M = 16 by nothing (11011114: 8.20 vs 8.18), gained at M = 9 (7.69 vs 7.88;
1536x7168 7.02 vs 7.41) and lost on the Triton pairs (2112x7168 M = 16: 13.16 vs 11.66).

PDL is used only for launches with at most :data:`PDL_MAX_M` rows of activations. H200, whole layer
forward, us, PDL late vs off in one run (benchmarks/results/session2/linear_*_pdl.json):
  M = 1:  FP8 block 7.8 vs 9.2 (2112x7168), 12.0 vs 13.0 (24576x1536), 34.9 vs 35.6 (7168x16384);
          W4A16 9.3 vs 9.4, 14.1 vs 14.5, 50.9 vs 52.5.
  M = 16: FP8 block 12.2 vs 10.5, 14.6 vs 13.5, 40.7 vs 42.0; W4A16 12.4 vs 10.8, 17.7 vs 18.3,
          59.8 vs 60.8: a loss on the shapes with fewer programs per SM, so off.
Session 3 (benchmarks/results/session3/): in the isolated probe (fp8_probe.json: quantization + GEMM,
PDL on vs off in one process) PDL won at every M in {1, 2, 4, 8, 16} on 2112x7168 (7.27 / 7.49 /
7.74 / 8.07 / 8.60 vs 8.21 / 8.44 / 8.45 / 8.73 / 9.40) and 7168x16384; but inside the layer
benchmarks M = 16 lost again on 2112x7168 (fp8small_layer_round1.json: 11.45 with PDL vs 9.22 without;
the final linear_fp8-block.json run with PDL up to 16: 12.3 vs 10.3 in session 2), while M = 2 and 4
gained there too (8.15 / 8.20 vs 8.38 / 8.46). Session 4 measured the layer with its weights read
from HBM (copies rotated past L2, as in a decode step; the earlier layer runs kept one L2-resident
copy): PDL up to M = 16 won at M = 16 on all three shapes (benchmarks/results/session4/
fp8_ab_r3.json: 10.73 / 15.07 / 36.35 us vs 11.46 / 15.50 / 37.89 with the bound 4) and tied at
M = 1 and 4. So the bound is 16 for the FP8 kernels. The W4A16 Triton kernels keep a
bound of 1 (``W4A16_PDL_MAX_M``, the session-2 measurement above); the W4A16 CUDA decode kernels
choose PDL themselves.
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

__all__ = ["PDL_MAX_M", "PDL_TRIGGERS", "PDL_TRIGGER_NAMES", "W4A16_PDL_MAX_M", "pdl_mode", "pdl_enabled", "launch_options", "pdl_prologue",
           "pdl_trigger"]

PDL_MAX_M = 16
W4A16_PDL_MAX_M = 1
# PDL_EARLY constexpr of each trigger placement: after the main loop, right after the wait, before it
PDL_TRIGGERS = {"late": 0, "early": 1, "first": 2}
PDL_TRIGGER_NAMES = {v: k for k, v in PDL_TRIGGERS.items()}  # PDL_EARLY constexpr -> trigger name


@functools.lru_cache(maxsize=None)
def _sm90_or_newer(device_index: int) -> bool:
    return torch.cuda.get_device_capability(device_index) >= (9, 0)


def pdl_mode(device: torch.device) -> str:
    """"off", "early" or "late": ``QLINEAR_PDL`` on CUDA devices of compute capability >= 9.0."""
    if device.type != "cuda":
        return "off"
    env = os.environ.get("QLINEAR_PDL", "late").strip().lower()
    if env in ("0", "off", "false"):
        return "off"
    if not _sm90_or_newer(device.index if device.index is not None else torch.cuda.current_device()):
        return "off"
    return "early" if env == "early" else "late"


def pdl_enabled(device: torch.device) -> bool:
    return pdl_mode(device) != "off"


def launch_options(device: torch.device, m: int, max_m: int | None = None, trigger: str | None = None) -> dict:
    """Keyword arguments for ``kernel[grid](...)`` of a launch over ``m`` activation rows: the
    ``USE_PDL`` / ``PDL_EARLY`` constexprs every PDL-aware kernel takes, plus Triton's
    ``launch_pdl`` launch option when PDL is on (never passed to the CPU interpreter). PDL is on
    for ``m <= max_m`` (default :data:`PDL_MAX_M`). ``trigger`` "first" / "early" / "late" places
    this launch's ``launch_dependents`` regardless of ``QLINEAR_PDL`` (which still turns PDL off).
    ``PDL_EARLY``: 0 late, 1 early, 2 first (:data:`PDL_TRIGGERS`)."""
    if trigger not in (None, *PDL_TRIGGERS):
        raise ValueError(f"trigger: expected None, 'first', 'early' or 'late', got {trigger!r}")
    bound = PDL_MAX_M if max_m is None else max_m
    mode = pdl_mode(device) if m <= bound else "off"
    if mode != "off" and trigger is not None:
        mode = trigger
    if mode == "off":
        return {"USE_PDL": False, "PDL_EARLY": 0}
    return {"USE_PDL": True, "PDL_EARLY": PDL_TRIGGERS[mode], "launch_pdl": True}


@triton.jit
def _launch_dependents():
    tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32, is_pure=False,
                              pack=1)


@triton.jit
def pdl_prologue(USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr):
    """First statement of a PDL-aware kernel: wait for the previous grid (and let the next one be
    scheduled: "first" before the wait, "early" after it). Nothing is traced when ``USE_PDL`` is
    False."""
    if USE_PDL:
        if PDL_EARLY == 2:
            _launch_dependents()
        tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
        if PDL_EARLY == 1:
            _launch_dependents()


@triton.jit
def pdl_trigger(USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr):
    """After the main loop ("late" mode): let the next PDL grid be scheduled."""
    if USE_PDL:
        if not PDL_EARLY:
            _launch_dependents()
