"""Linear layers with plain float weights, and the layer's side of the method hooks."""

from __future__ import annotations

from typing import Sequence

import pytest
import torch

from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.parameter import DimMap, ShardedParameter
from qlinear.quantization.base import QuantizationConfig, QuantizeMethodBase

SIZES = [[1536, 576], [256, 72], [7, 13, 5]]
DTYPES = [torch.float32, torch.bfloat16]


def _rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [False, True])
def test_merged_matches_fp32_reference(sizes, dtype, bias):
    k = 96
    layer = MergedReplicatedLinear(k, sizes, bias=bias, params_dtype=dtype, prefix="m.fused")
    ws = [torch.randn(n, k) for n in sizes]
    bs = [torch.randn(n) for n in sizes]
    for i in torch.randperm(len(sizes)).tolist():
        layer.weight.weight_loader(layer.weight, ws[i], i)
        if bias:
            layer.bias.weight_loader(layer.bias, bs[i], i)
    layer.process_weights_after_loading()
    x = torch.randn(5, 3, k)
    ref = x @ torch.cat(ws).T + (torch.cat(bs) if bias else 0)
    out = layer(x.to(dtype))
    assert out.shape == (5, 3, sum(sizes)) and out.dtype == dtype
    assert _rel(out, ref) <= (1e-5 if dtype == torch.float32 else 1e-2)


def test_replicated_is_the_one_shard_case():
    layer = ReplicatedLinear(32, 48, params_dtype=torch.float32, prefix="p")
    w = torch.randn(48, 32)
    layer.weight.weight_loader(layer.weight, w)
    layer.process_weights_after_loading()
    x = torch.randn(4, 32)
    assert _rel(layer(x), x @ w.T) <= 1e-6
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 32\], got \(4, 31\)"):
        layer(torch.randn(4, 31))


def test_missing_shard_is_an_error_at_finishing():
    layer = MergedReplicatedLinear(16, [8, 8], params_dtype=torch.float32, prefix="a.fused",
                                   shard_names=["q_a_proj", "kv_a_proj_with_mqa"])
    layer.weight.weight_loader(layer.weight, torch.randn(8, 16), 0)
    with pytest.raises(ValueError, match=r"a.fused: never loaded: a.fused.weight: \['kv_a_proj_with_mqa'\]"):
        layer.process_weights_after_loading()


class _BlockMethod(QuantizeMethodBase):
    """A stand-in format with 128x128 blocks: only the hooks matter here."""

    name = "toy-block"

    @property
    def weight_block_size(self):
        return (128, 128)

    def create_weights(self, layer, input_size: int, output_partition_sizes: Sequence[int], params_dtype):
        layer.register_parameter("weight", ShardedParameter(
            torch.empty(sum(output_partition_sizes), input_size), plan=layer.shard_plan, output=DimMap(0)))

    def apply(self, layer, x, bias=None):
        return x @ layer.weight.T


class _Cfg(QuantizationConfig):
    quant_method = "toy"

    @classmethod
    def from_config(cls, config):
        return cls()

    def get_quant_method(self, layer, prefix):
        return _BlockMethod()


def test_block_alignment_is_checked_through_the_hook():
    MergedReplicatedLinear(7168, [1536, 576], quant_config=_Cfg(), prefix="ok")  # ragged last shard is legal
    with pytest.raises(ValueError, match=r"bad: toy-block with weight_block_size=\[128, 128\].*\[576, 1536\].*shard 0 has 576"):
        MergedReplicatedLinear(7168, [576, 1536], quant_config=_Cfg(), prefix="bad")
