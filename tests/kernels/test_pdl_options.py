"""Launch options of the PDL-aware Triton kernels (``qlinear.kernels._pdl.launch_options``): which
trigger placement each request gets, the M bound, and the refusal of an unknown placement; and the
order of ``griddepcontrol`` instructions each placement compiles to (PTX for sm_90, no GPU needed).
The placements themselves run on the GPU (tests/gpu/test_fp8_cuda_gemv.py: the quantizer + GEMV chain
with the trigger "first" and "early" in one CUDA graph).

``_pdl`` imports triton, so it is imported when a test runs, not when this file is collected:
test_rms_norm_triton.py switches the interpreter on for the process only if triton has not been
imported by then."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

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


_PTX_ORDER = textwrap.dedent("""
    import json
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from qlinear.kernels._pdl import PDL_TRIGGERS, pdl_prologue, pdl_trigger

    @triton.jit
    def k(X, USE_PDL: tl.constexpr, PDL_EARLY: tl.constexpr):
        pdl_prologue(USE_PDL, PDL_EARLY)
        tl.store(X, 1.0)
        pdl_trigger(USE_PDL, PDL_EARLY)

    out = {}
    for name, e in PDL_TRIGGERS.items():
        src = ASTSource(fn=k, signature={"X": "*fp32", "USE_PDL": "constexpr", "PDL_EARLY": "constexpr"},
                        constexprs={"USE_PDL": True, "PDL_EARLY": e})
        ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
        out[name] = [("launch" if "launch_dependents" in ln else "wait" if "griddepcontrol.wait" in ln else "store")
                     for ln in ptx.splitlines() if "griddepcontrol" in ln or "st.global" in ln]
    print(json.dumps(out))
""")


def test_trigger_placement_in_ptx(tmp_path):
    """Each placement's PTX: "first" triggers before the wait, "early" right after it, "late" after
    the kernel's work (here one store). Compiled in a child process: this one may run triton
    interpreted (tests/conftest.py)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {key: v for key, v in os.environ.items() if key != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    script = tmp_path / "pdl_ptx_order.py"  # triton.jit needs its kernel's source file
    script.write_text(_PTX_ORDER)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, cwd=root,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    order = json.loads(proc.stdout.strip().splitlines()[-1])
    assert order == {"first": ["launch", "wait", "store"], "early": ["wait", "launch", "store"],
                     "late": ["wait", "store", "launch"]}, order
