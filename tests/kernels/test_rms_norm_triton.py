"""The Triton RMSNorm kernels under the Triton interpreter (CPU), against the fp32 reference.

``TRITON_INTERPRET=1`` must be set before triton is first imported (``triton.jit`` and triton's
own library functions pick the interpreter at definition time). So:

* on a CPU-only machine tests/conftest.py sets the variable before any test module is collected,
  and the tests run here;
* otherwise (triton already imported compiled-mode, or a GPU machine, where interpreting would
  slow down or break the GPU tests in the same process) the in-process tests are skipped and one
  test runs this file in a subprocess with ``TRITON_INTERPRET=1``.

Note: the interpreter converts fp32 -> bf16 by truncation (the GPU rounds to nearest), so bf16
results may differ from the reference by one bf16 ulp; the tolerances allow it.
"""

from __future__ import annotations

import os

import pytest
from _interpreter import rerun_interpreted
import torch

IN_PROCESS = os.environ.get("TRITON_INTERPRET") == "1"

triton = pytest.importorskip("triton")

from qlinear.ops.norm import _collapse_leading  # noqa: E402
from qlinear.reference.norm import fused_add_rms_norm_ref, rms_norm_ref  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
HIDDEN = [1, 7, 64, 129]
TOKENS = [1, 5]
EPS = 1e-6
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2), torch.float32: (1e-5, 1e-5)}


@pytest.fixture(scope="module")
def nt():
    if not IN_PROCESS:
        pytest.skip("triton was imported without TRITON_INTERPRET=1; covered by test_interpreted_in_subprocess")
    from qlinear.kernels import norm_triton

    assert type(norm_triton._rms_norm_kernel).__name__ == "InterpretedFunction"
    return norm_triton


@pytest.mark.skipif(IN_PROCESS, reason="the tests run in this process")
def test_interpreted_in_subprocess():
    proc = rerun_interpreted(__file__, {"CUDA_VISIBLE_DEVICES": ""}, timeout=600)
    assert " passed" in proc.stdout


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _close(actual, expected, dtype):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol, atol=atol, equal_nan=True)


def _run(nt, out, x, w):
    for o3, x3 in _collapse_leading((out, x)):
        nt.rms_norm_triton(o3, x3, w, EPS)


def _run_fused(nt, x, r, w):
    for x3, r3 in _collapse_leading((x, r)):
        nt.fused_add_rms_norm_triton(x3, r3, w, EPS)


def _weight(H, dtype):
    return (1 + 0.5 * torch.randn(H, generator=_gen(11))).to(dtype)


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", HIDDEN)
@pytest.mark.parametrize("T", TOKENS)
def test_rms_norm(nt, T, H, dtype, strided):
    base = (torch.randn(T, H + 11 if strided else H, generator=_gen(T * H)) * 2).to(dtype)
    x = base[:, 3 : 3 + H] if strided else base
    if T > 1 and H > 1:
        assert x.is_contiguous() != strided
    w = _weight(H, dtype)
    base0 = base.clone()
    out = torch.full((T, H), 7.0, dtype=dtype)
    _run(nt, out, x, w)
    _close(out, rms_norm_ref(x, w, EPS), dtype)
    assert torch.equal(base, base0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", HIDDEN)
def test_fused_add_strided(nt, H, dtype):
    T = 5
    buf = (torch.randn(T, 2 * H + 9, generator=_gen(H)) * 2).to(dtype)
    x, r = buf[:, 2 : 2 + H], buf[:, H + 5 : 2 * H + 5]
    w = _weight(H, dtype)
    buf0 = buf.clone()
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    _run_fused(nt, x, r, w)
    _close(r, r_ref, dtype)
    _close(x, out_ref, dtype)
    keep = torch.ones_like(buf, dtype=torch.bool)
    keep[:, 2 : 2 + H] = False
    keep[:, H + 5 : 2 * H + 5] = False
    assert torch.equal(buf[keep], buf0[keep]), "bytes around the strided views were written"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_deepseek_slices_small(nt, dtype):
    # [T, 2112] fused projection output, scaled by 1/8: q_c = [:, :192], kv_c = [:, 192:256]
    T, W = 6, 264
    buf = (torch.randn(T, W, generator=_gen(5)) * 3).to(dtype)
    buf0 = buf.clone()
    for lo, hi in ((0, 192), (192, 256)):
        view = buf[:, lo:hi]
        w = _weight(hi - lo, dtype)
        expected = rms_norm_ref(view, w, EPS)
        _run(nt, view, view, w)  # in place, as the model does
        _close(view, expected, dtype)
    assert torch.equal(buf[:, 256:], buf0[:, 256:])
    # fused add on the q slice with a contiguous residual
    x = buf[:, :192]
    r = torch.randn(T, 192, generator=_gen(6)).to(dtype)
    w = _weight(192, dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    _run_fused(nt, x, r, w)
    _close(r, r_ref, dtype)
    _close(x, out_ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_misaligned_pointer(nt, dtype):
    H = 64
    flat = torch.randn(4 * H + 1, generator=_gen(9)).to(dtype)
    x = flat[1:].view(4, H)  # storage offset of one element
    assert x.storage_offset() == 1
    w = _weight(H, dtype)
    out = torch.empty(4 * H + 1, dtype=dtype)[1:].view(4, H)
    _run(nt, out, x, w)
    _close(out, rms_norm_ref(x, w, EPS), dtype)
    r = torch.randn(4 * H + 3, generator=_gen(10)).to(dtype)[3:].view(4, H)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    _run_fused(nt, x, r, w)
    _close(r, r_ref, dtype)
    _close(x, out_ref, dtype)


def test_views_3d_4d(nt):
    w = _weight(40, torch.float32)
    for x in (
        torch.randn(3, 6, 48)[:, :4, 4:44],
        torch.randn(2, 4, 3, 48)[:, :3, :2, 3:43],
        torch.randn(5, 3, 40).transpose(0, 1),
    ):
        out = torch.empty(x.shape)
        _run(nt, out, x, w)
        _close(out, rms_norm_ref(x, w, EPS), torch.float32)
        r = torch.randn(x.shape)
        out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
        _run_fused(nt, x, r, w)
        _close(r, r_ref, torch.float32)
        _close(x, out_ref, torch.float32)


@pytest.mark.parametrize("H", [37, 64])
def test_multi_chunk_path(nt, monkeypatch, H):
    # rows longer than _MAX_SINGLE_PASS loop over chunks (two reads); force it at small H
    monkeypatch.setattr(nt, "_MAX_SINGLE_PASS", 16)
    monkeypatch.setattr(nt, "_CHUNK", 8)
    assert nt._launch_params(3, H, 4)[2] == -(-H // 8)
    x = torch.randn(3, H + 5)[:, 2 : 2 + H]
    w = _weight(H, torch.float32)
    out = torch.empty(3, H)
    _run(nt, out, x, w)
    _close(out, rms_norm_ref(x, w, EPS), torch.float32)
    r = torch.randn(3, H)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    _run_fused(nt, x, r, w)
    _close(r, r_ref, torch.float32)
    _close(x, out_ref, torch.float32)


def test_many_rows_per_program(nt):
    # enough rows that several go to one program (ROWS > 1)
    T, H = 600, 16
    assert nt._launch_params(T, H, 4)[0] > 1
    x = torch.randn(T, H + 4)[:, :H]
    w = _weight(H, torch.float32)
    out = torch.empty(T, H)
    _run(nt, out, x, w)
    _close(out, rms_norm_ref(x, w, EPS), torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_nan_inf_like_reference(nt, dtype):
    x = torch.randn(4, 33, generator=_gen(12)).to(dtype)
    x[0, 3] = float("nan")
    x[1, 5] = float("inf")
    x[2, 0] = float("-inf")
    w = _weight(33, dtype)
    out = torch.empty_like(x)
    _run(nt, out, x, w)
    expected = rms_norm_ref(x, w, EPS)
    assert torch.equal(torch.isnan(out), torch.isnan(expected))
    _close(out, expected, dtype)
    r = torch.randn(4, 33).to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    _run_fused(nt, x, r, w)
    _close(r, r_ref, dtype)
    _close(x, out_ref, dtype)


def _check_strided_plain_and_fused(nt, T, H, config, dtype):
    """rms_norm and fused_add_rms_norm (Triton, ``config``) on strided [T, H] rows vs the fp32
    reference; the fused residual must equal the reference's exactly."""
    x = (torch.randn(T, H + 9, generator=_gen(T + H)) * 2).to(dtype)[:, 3 : 3 + H]
    w = _weight(H, dtype)
    out = torch.empty(T, H, dtype=dtype)
    nt.rms_norm_triton(out[None], x[None], w, EPS, config)
    _close(out, rms_norm_ref(x, w, EPS), dtype)
    r = torch.randn(T, H, generator=_gen(2)).to(dtype)
    out_ref, r_ref = fused_add_rms_norm_ref(x, r, w, EPS)
    nt.fused_add_rms_norm_triton(x[None], r[None], w, EPS, config)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=0)
    _close(x, out_ref, dtype)


@pytest.mark.parametrize("config", [(2, 1, 0, 1), (4, 2, 1, 1), (1, 4, 0, 1)], ids=str)
@pytest.mark.parametrize("T,H", [(8, 64), (5, 64), (3, 37)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_static_rows_kernel(nt, T, H, config, dtype):
    """The constant-H rows kernel (config static = 1): unmasked (H a power of two, ROWS dividing
    T) and masked tiles, strided rows, plain and fused."""
    _check_strided_plain_and_fused(nt, T, H, config, dtype)


def test_static_rule_field(nt, monkeypatch):
    # a 5th rule field selects the rows kernel; 4-field rules (older tables) still parse
    monkeypatch.setattr(nt, "_MANY_ROW_RULES", ((1 << 62, 2, 1, 0, 1),))
    assert nt._launch_params(1000, 512, 2)[3:] == (1, 0, 1)
    monkeypatch.setattr(nt, "_MANY_ROW_RULES", ((1 << 62, 2, 1, 0),))
    assert nt._launch_params(1000, 512, 2)[5] == 0
    with pytest.raises(ValueError, match="static"):
        nt._launch_params(1000, 512, 2, (2, 1, 0, 3))


@pytest.mark.parametrize("config", [(0, 1, -1, -1, 16), (0, 4, -1, -1, 32), (1, 2, 0, 0, 128),
                                    (0, 4, -1, -1, 32, 1, 0), (1, 2, 0, 0, 16, 2, 1), (2, 2, 0, 0, 32, 1, 1),
                                    (4, 4, 0, 0, 16, 3, 1)], ids=str)
@pytest.mark.parametrize("T,H", [(5, 64), (3, 37)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_loop_kernel(nt, T, H, config, dtype):
    """The two-pass loop kernel (5th config field R): R dividing H, not dividing it, R > H;
    6th num_stages, 7th flat (0 = the 3-D row addressing), 1st rows per program (flat only: 2 and
    4 with T = 5 / 3 leave a partial last program); strided rows, plain and fused."""
    _check_strided_plain_and_fused(nt, T, H, config, dtype)


@pytest.mark.parametrize("config", [(1, 2, 0, 0, 16), (4, 2, 0, 0, 32, 1, 1)], ids=str)
def test_loop_kernel_3d_rows(nt, config):
    """The loop kernel on a [2, 3, H] view whose two leading strides do not merge (n_outer > 1):
    the 3-D row addressing, whatever the config asks for the flat one."""
    H = 40
    base = (torch.randn(2, 5, H + 6, generator=_gen(9)) * 2).to(torch.float32)
    x = base[:, 1:4, 2 : 2 + H]
    w = _weight(H, torch.float32)
    out = torch.empty(2, 3, H)
    nt.rms_norm_triton(out, x, w, EPS, config)
    _close(out, rms_norm_ref(x, w, EPS), torch.float32)


def test_loop_rule_field(nt, monkeypatch):
    # a 6th rule field selects the loop kernel; a config's 5th field overrides it
    monkeypatch.setattr(nt, "_MANY_ROW_RULES", ((1 << 62, 1, 8, 0, 0, 2048),))
    assert nt._loop_block(1000, 7168, 2) == 2048
    assert nt._loop_block(1000, 7168, 2, (1, 8, 0, 0, 0)) == 0
    assert nt._loop_block(1000, 7168, 2, (1, 8, 0, 0, -1)) == 2048
    monkeypatch.setattr(nt, "_MANY_ROW_RULES", ((1 << 62, 1, 8, 0, 0),))
    assert nt._loop_block(1000, 7168, 2) == 0
    with pytest.raises(ValueError, match="loop"):
        nt._loop_block(1000, 7168, 2, (1, 8, 0, 0, 100))
