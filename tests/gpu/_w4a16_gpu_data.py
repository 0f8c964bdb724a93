"""Random W4A16 layers for the GPU tests of the CUDA kernels (test_w4a16_cuda_gpu.py, test_w4a16_fold.py,
test_w4a16_gemm_gpu.py): codes, zeros and scales drawn on the device in that order from one seeded
generator, packed, and the fp32 reference weight from ``dequantize_canonical`` (independent of the
packed layout); and the comparison of a kernel's output with that reference."""

from __future__ import annotations

import torch

from qlinear.ops import w4a16 as ops
from qlinear.reference import w4a16 as ref


def canonical(n, k, group=128, asym=True, scale_dtype=torch.bfloat16, seed=0, device="cuda"):
    """(q [n, k] int32 in 0..15, zeros [n, G] or None, scales [n, G] in ``scale_dtype``); group -1 =
    per channel."""
    gen = torch.Generator(device=device).manual_seed(seed)
    g = k if group == -1 else group
    q = torch.randint(0, 16, (n, k), device=device, generator=gen, dtype=torch.int32)
    z = torch.randint(0, 16, (n, k // g), device=device, generator=gen, dtype=torch.int32) if asym else None
    s = (torch.rand(n, k // g, device=device, generator=gen) * 0.02 + 1e-3).to(scale_dtype)
    return q, z, s


def layer(n, k, group=128, asym=True, scale_dtype=torch.bfloat16, seed=0, device="cuda"):
    """(packed weights, fp32 reference weight [n, k])."""
    q, z, s = canonical(n, k, group, asym, scale_dtype, seed, device)
    packed = ops.pack_w4a16(q, z, s, group, scale_dtype=scale_dtype)
    return packed, ref.dequantize_canonical(q, z, s.float(), group)


def assert_matches(y, x, w, b, what, tol=1e-2):
    """y of x [M, K] against the fp32 reference x @ w.T + b: dtype and shape, relative error <= tol,
    and every output element (a wrong row, token or superblock must fail, not just move the norm).
    Returns the reference."""
    want = x.float() @ w.T + (b.float() if b is not None else 0)
    assert y is not None and y.dtype == x.dtype and y.shape == want.shape, what
    err = ((y.float() - want).norm() / want.norm()).item()
    assert err <= tol, f"rel err {err:.3e} ({what})"
    close = torch.isclose(y.float(), want, rtol=3e-2, atol=3e-2 * want.abs().max().item())
    assert bool(close.all()), f"{int((~close).sum())} wrong elements ({what})"
    return want


def check_pdl_chain(packed, w, x, call, links=4, tol=1e-2):
    """A chain of ``links`` launches ``call(x, pdl)`` whose x is the previous link's output (K = N): PDL on
    and off give the same bits, and the chain captured in a CUDA graph, replayed on fresh x, matches the
    fp32 reference ``prev @ w.T`` at every link (the kernels request weights before griddepcontrol.wait:
    each link must still see its whole input)."""

    def chain(pdl):
        ys = [x]
        for _ in range(links):
            ys.append(call(ys[-1], pdl))
        return ys[1:]

    on, off = chain(True), chain(False)
    assert all(torch.equal(a, b) for a, b in zip(on, off))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ys = chain(True)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    prev = x
    for i, y in enumerate(ys):
        want = prev.float() @ w.T
        err = ((y.float() - want).norm() / want.norm()).item()
        assert err <= tol, f"link {i}: rel err {err:.3e}"
        prev = y
