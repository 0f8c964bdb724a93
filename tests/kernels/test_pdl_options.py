"""Launch options of the PDL-aware Triton kernels (``qlinear.kernels._pdl.launch_options``): which
trigger placement each request gets, the M bound, and the refusal of an unknown placement. The
placements themselves run on the GPU (tests/gpu/test_fp8_cuda_gemv.py: the quantizer + GEMV chain
with the trigger "first" and "early" in one CUDA graph).

``_pdl`` imports triton, so it is imported when a test runs, not when this file is collected:
test_rms_norm_triton.py switches the interpreter on for the process only if triton has not been
imported by then."""

import pytest
import torch

CPU = torch.device("cpu")


@pytest.fixture
def _pdl():
    from qlinear.kernels import _pdl

    return _pdl


def test_cpu_is_off(_pdl):
    assert _pdl.launch_options(CPU, 1, trigger="first") == {"USE_PDL": False, "PDL_EARLY": 0}


@pytest.mark.parametrize("env_mode", ["late", "early"])
def test_trigger_placements(_pdl, monkeypatch, env_mode):
    monkeypatch.setattr(_pdl, "pdl_mode", lambda device: env_mode)
    default = _pdl.launch_options(CPU, 4)
    assert default == {"USE_PDL": True, "PDL_EARLY": {"late": 0, "early": 1}[env_mode], "launch_pdl": True}
    got = {t: _pdl.launch_options(CPU, 4, trigger=t)["PDL_EARLY"] for t in ("late", "early", "first")}
    assert got == {"late": 0, "early": 1, "first": 2}
    # past the M bound PDL is off whatever the trigger asks
    assert _pdl.launch_options(CPU, _pdl.PDL_MAX_M + 1, trigger="first")["USE_PDL"] is False
    assert _pdl.launch_options(CPU, 40, max_m=64, trigger="first")["PDL_EARLY"] == 2


def test_unknown_trigger_named(_pdl, monkeypatch):
    monkeypatch.setattr(_pdl, "pdl_mode", lambda device: "late")
    with pytest.raises(ValueError, match="trigger.*'first'.*'soon'"):
        _pdl.launch_options(CPU, 1, trigger="soon")
