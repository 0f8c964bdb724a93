"""qlinear._utils.define_op: the operators it registers behave as torch operators (schema with mutations, fake
kernels under torch.compile and on meta tensors) and refuse a backward pass loudly instead of torch's
autograd fallback, which only warns and hands back the gradient of whatever the kernel happened to record."""

from __future__ import annotations

import pytest
import torch

from qlinear._utils import define_op


@define_op("qlinear_test::scale_rows", mutates_args=())
def _scale_rows(x: torch.Tensor, s: float) -> torch.Tensor:
    return x * s


@_scale_rows.register_fake
def _(x, s):
    return torch.empty_like(x)


@define_op("qlinear_test::split_halves", mutates_args=())
def _split_halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = x.shape[-1] // 2
    return x[..., :h].clone(), x[..., h:].clone()


@_split_halves.register_fake
def _(x):
    h = x.shape[-1] // 2
    return x.new_empty((*x.shape[:-1], h)), x.new_empty((*x.shape[:-1], x.shape[-1] - h))


@define_op("qlinear_test::add_into", mutates_args=("out",))
def _add_into(out: torch.Tensor, x: torch.Tensor) -> None:
    out.add_(x)


@_add_into.register_fake
def _(out, x):
    return None


def test_schema_and_results():
    schema = str(torch.ops.qlinear_test.add_into.default._schema)
    assert "Tensor(a0!) out" in schema, schema
    x = torch.randn(3, 8)
    torch.testing.assert_close(_scale_rows(x, 2.5), x * 2.5, rtol=0, atol=0)
    a, b = _split_halves(x)
    torch.testing.assert_close(torch.cat([a, b], -1), x, rtol=0, atol=0)
    out = torch.randn(3, 8)
    want = out + x
    _add_into(out, x)
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def test_opcheck():
    x = torch.randn(4, 6)
    torch.library.opcheck(torch.ops.qlinear_test.scale_rows.default, (x, 0.5))
    torch.library.opcheck(torch.ops.qlinear_test.split_halves.default, (x,))
    torch.library.opcheck(torch.ops.qlinear_test.add_into.default, (torch.randn(4, 6), x))


def test_meta_and_compile_use_the_fake():
    y = _scale_rows(torch.empty(5, 7, device="meta"), 2.0)
    assert y.device.type == "meta" and y.shape == (5, 7)

    def f(x, out):
        a, b = _split_halves(_scale_rows(x, 3.0))
        _add_into(out, a)
        return out, b

    x = torch.randn(2, 10)
    want_out, want_b = f(x, torch.ones(2, 5))
    got_out, got_b = torch.compile(f, backend="aot_eager", fullgraph=True)(x, torch.ones(2, 5))
    torch.testing.assert_close(got_out, want_out, rtol=0, atol=0)
    torch.testing.assert_close(got_b, want_b, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["single", "tuple"])
def test_backward_raises(op):
    x = torch.randn(3, 8, requires_grad=True)
    outs = (_scale_rows(x, 2.0),) if op == "single" else _split_halves(x)
    assert all(o.requires_grad for o in outs)
    with pytest.raises(RuntimeError, match="qlinear_test::(scale_rows|split_halves): no backward"):
        sum(o.sum() for o in outs).backward()


def test_no_grad_outputs_are_plain():
    x = torch.randn(3, 8, requires_grad=True)
    with torch.no_grad():
        y = _scale_rows(x, 2.0)
    assert not y.requires_grad and y.grad_fn is None
    y = _scale_rows(torch.randn(3, 8), 2.0)  # nothing requires grad: no wrapper node
    assert not y.requires_grad and y.grad_fn is None
