"""Loading into layers whose parameters live on a CUDA device, and the selfcheck on the GPU.

Run on the GPU machine: ``python -m pytest -q -m gpu tests/loading/test_load_gpu.py``.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from qlinear.layers import MergedReplicatedLinear
from qlinear.loading import CheckpointError, load_checkpoint, save_checkpoint
from qlinear.loading import checkpoint as checkpoint_module

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

PARENT = "model.layers.0.self_attn"
SHARDS = ["q_a_proj", "kv_a_proj_with_mqa"]
FUSED = {"fused_qkv_a_proj": SHARDS}


def _tensors(k, sizes, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {f"{PARENT}.{s}.weight": torch.randn(n, k, generator=gen).to(torch.bfloat16) for s, n in zip(SHARDS, sizes)}


def test_load_into_cuda_params_and_undo(tmp_path, monkeypatch):
    k, sizes = 7168, [1536, 576]
    tensors = _tensors(k, sizes)
    save_checkpoint(tensors, tmp_path, max_shard_bytes=1536 * k * 2 + 8)
    with torch.device("cuda"):
        layer = MergedReplicatedLinear(k, sizes, prefix=f"{PARENT}.fused_qkv_a_proj")
    report = load_checkpoint(layer, tmp_path, fused_modules=FUSED)
    assert report.ok and layer.weight.device.type == "cuda"
    x = torch.randn(8, k, device="cuda", dtype=torch.bfloat16)
    ref = x.float() @ torch.cat([tensors[f"{PARENT}.{s}.weight"] for s in SHARDS]).float().cuda().T
    y = layer(x).float()
    assert float((y - ref).norm() / ref.norm()) < 1e-2

    with torch.device("cuda"):
        fresh = MergedReplicatedLinear(k, sizes, prefix=f"{PARENT}.fused_qkv_a_proj")
    torch.nn.init.normal_(fresh.weight)
    before = fresh.weight.detach().clone()
    real, calls = checkpoint_module._load_one, []

    def flaky(target, tensor):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("simulated read error")
        real(target, tensor)

    monkeypatch.setattr(checkpoint_module, "_load_one", flaky)
    with pytest.raises(CheckpointError, match="every change was undone"):
        load_checkpoint(fresh, tmp_path, fused_modules=FUSED)
    assert torch.equal(fresh.weight, before) and fresh.weight.device.type == "cuda"


def test_selfcheck_rows_on_cuda():
    from qlinear.selfcheck import FORMATS, run_selfcheck

    have_ct = importlib.util.find_spec("compressed_tensors") is not None
    names = [n for n, _ in FORMATS if have_ct or not n.startswith("ct-")]
    rows = run_selfcheck(device="cuda", only=names)  # --full runs as its own command (README)
    bad = [(r.format, r.error) for r in rows if not r.ok]
    assert not bad, bad
