"""Helpers shared by the robustness tests (imported by name: pytest puts this directory on
``sys.path`` for its conftest). Nothing here imports triton.

* ``EXAMPLES`` / ``tally`` / ``property_of``: count the examples each property ran and check that
  it reached the profile's ``max_examples`` (at least 200 in CI).
* ``StridedView``: a ``[..., H]`` view at a random storage offset with random (possibly
  non-collapsible, possibly permuted) leading strides inside a larger buffer of sentinel values,
  and the check that nothing outside the view changed.
* ``snapshot`` / ``assert_same``: every byte of every parameter and buffer of a model, plus the
  loaders' bookkeeping, to prove that a refused load changed nothing.
"""

from __future__ import annotations

import collections
import functools

import torch
from hypothesis import settings
from hypothesis import strategies as st
from torch import nn

EXAMPLES: collections.Counter = collections.Counter()

#: hidden sizes: 1, small primes and odd sizes, around powers of two
HIDDEN = [1, 2, 3, 5, 7, 11, 13, 16, 17, 31, 37, 61, 64, 67, 97, 127, 128, 129, 131]


def tally(name: str) -> None:
    EXAMPLES[name] += 1


def property_of(name: str):
    """Put above ``@given``: after the run, assert the property saw ``max_examples`` examples
    (hypothesis stops early only when it has exhausted a small search space; ours are not)."""

    def deco(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            before = EXAMPLES[name]
            test(*args, **kwargs)
            ran = EXAMPLES[name] - before
            want = settings.default.max_examples
            assert ran >= want, f"property {name} ran {ran} examples, the profile asks for {want}"

        return wrapper

    return deco


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def bits_of(t: torch.Tensor) -> torch.Tensor:
    """Integer view of ``t``'s bytes (NaN-safe, -0.0-aware equality)."""
    t = t.detach()
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.contiguous().view(ints[t.element_size()]) if t.dim() else t.reshape(1).view(ints[t.element_size()])


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits_of(a), bits_of(b))


# -- strided views with sentinels -------------------------------------------------------------------


class StridedView:
    """``view``: shape ``lead + [H]``, ``stride(-1) == 1``, inside ``buf`` (1-D, sentinel-filled)."""

    def __init__(self, buf: torch.Tensor, shape, strides, offset: int):
        self.buf = buf
        self.view = buf.as_strided(shape, strides, offset)
        self.before = buf.clone()
        idx = torch.arange(buf.numel()).as_strided(shape, strides, offset)
        self.inside = torch.zeros(buf.numel(), dtype=torch.bool)
        self.inside[idx.reshape(-1)] = True
        # a view that aliases itself would make "in place" ambiguous; the layouts below never do
        assert int(self.inside.sum()) == self.view.numel()

    def assert_outside_untouched(self, what: str = "view") -> None:
        out = ~self.inside
        assert torch.equal(bits_of(self.buf[out]), bits_of(self.before[out])), f"{what}: memory around the view was written"

    def assert_unchanged(self, what: str = "view") -> None:
        assert torch.equal(bits_of(self.buf), bits_of(self.before)), f"{what}: was modified"


@st.composite
def view_layouts(draw, shape=None, max_lead: int = 2, factor: int = 1):
    """(shape, strides, offset, numel) of a ``[..., H]`` view with ``stride(-1) == 1``.

    ``shape`` (drawn when None: 0..max_lead leading dims of sizes 1..5 and H from ``HIDDEN``) is
    laid out in a random storage order (so an outer dim may have the smaller stride), each
    leading stride leaving a random gap (so dims need not collapse into one row stride); the
    innermost row stride is at least ``factor * H`` (``factor=2``: room for a second view at
    offset ``+H`` in the same buffer). Storage offset 0..9, 0..7 spare elements at the end.
    """
    if shape is None:
        lead = draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=max_lead))
        shape = tuple(lead) + (draw(st.sampled_from(HIDDEN)),)
    shape = tuple(shape)
    lead, h = shape[:-1], shape[-1]
    order = draw(st.permutations(range(len(lead)))) if lead else []
    strides = [0] * len(lead)
    step = factor * h
    for d in reversed(order):  # innermost (last in storage order) first
        step += draw(st.integers(0, 6))
        strides[d] = step
        step *= lead[d]
    strides = tuple(strides) + (1,)
    offset = draw(st.integers(0, 9))
    tail = draw(st.integers(0, 7))
    extent = sum((n - 1) * s for n, s in zip(shape, strides)) + 1 + (factor - 1) * h
    return shape, strides, offset, offset + extent + tail


def sentinel_buffer(numel: int, dtype: torch.dtype, seed: int, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(numel, generator=gen(seed)) * scale).to(dtype)


# -- model snapshots ---------------------------------------------------------------------------------


def snapshot(model: nn.Module) -> dict:
    """Every parameter / buffer (bytes, dtype, shape, stride, storage identity), the loaders'
    ``loaded_shards`` and the layers' ``weights_finished`` flags."""
    tensors = {}
    for kind, items in (("param", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, t in items:
            tensors[f"{kind}:{name}"] = (
                t.dtype, tuple(t.shape), tuple(t.stride()), t.untyped_storage().data_ptr(),
                bits_of(t).clone(), frozenset(getattr(t, "loaded_shards", ()) or ()),
            )
    flags = {name: getattr(m, "weights_finished", None) for name, m in model.named_modules()}
    return {"tensors": tensors, "flags": flags}


def assert_same(model: nn.Module, before: dict) -> None:
    after = snapshot(model)
    assert sorted(after["tensors"]) == sorted(before["tensors"]), "parameters / buffers were added or removed"
    for name, (dtype, shape, stride, ptr, data, shards) in before["tensors"].items():
        a = after["tensors"][name]
        assert (a[0], a[1], a[2]) == (dtype, shape, stride), f"{name}: dtype/shape/stride changed"
        assert a[3] == ptr, f"{name}: storage was replaced"
        assert torch.equal(a[4], data), f"{name}: bytes changed"
        assert a[5] == shards, f"{name}: loaded_shards changed {set(shards)} -> {set(a[5])}"
    assert after["flags"] == before["flags"], "weights_finished changed"


def assert_models_equal(a: nn.Module, b: nn.Module) -> None:
    """Same parameter / buffer names and bytes (storage identity not compared)."""
    sa, sb = snapshot(a)["tensors"], snapshot(b)["tensors"]
    assert sorted(sa) == sorted(sb)
    for name in sa:
        assert sa[name][:3] == sb[name][:3] or sa[name][:2] == sb[name][:2], f"{name}: layout differs"
        assert torch.equal(sa[name][4], sb[name][4]), f"{name}: bytes differ"
        assert sa[name][5] == sb[name][5], f"{name}: loaded shards differ"


def fp64_rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """y = x / sqrt(mean(x^2) + eps) * w, in fp64, straight from the formula."""
    xd, wd = x.double(), w.double()
    h = x.shape[-1]
    ms = (xd * xd).sum(dim=-1, keepdim=True) / h
    return xd / torch.sqrt(ms + eps) * wd


def ulp_tol(dtype: torch.dtype) -> float:
    """Relative tolerance of one (bf16: two) rounding(s) in ``dtype`` plus fp32 accumulation."""
    return {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]


def close_ulp(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    """``actual`` within :func:`ulp_tol` of the fp64 ``expected`` (absolute tolerance scaled by its
    largest magnitude when that exceeds 1); ``what`` names the case in the failure message."""
    tol = ulp_tol(dtype)
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    torch.testing.assert_close(actual.double(), expected, rtol=tol, atol=tol * scale, msg=lambda m: f"{what}: {m}")


E4M3 = torch.float8_e4m3fn


def quant_formula(x2: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The documented FP8 group quantizer, one group at a time on a 2-D x, fp32 IEEE ops and torch's
    RNE e4m3 cast: ``s = max(amax, 1e-10) / 448``, ``q = e4m3(clamp(x / s, -448, 448))``."""
    m, k = x2.shape
    groups = -(-k // group)
    q = torch.empty(m, k, dtype=E4M3)
    s = torch.empty(m, groups, dtype=torch.float32)
    for j in range(groups):
        part = x2[:, j * group : (j + 1) * group].float()
        scale = torch.clamp(part.abs().amax(dim=1), min=1e-10) / 448.0
        s[:, j] = scale
        q[:, j * group : (j + 1) * group] = torch.clamp(part / scale[:, None], -448.0, 448.0).to(E4M3)
    return q, s
