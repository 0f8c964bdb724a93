"""Concurrency on the CPU: threads loading different models at the same time give exactly the
models that serial loads give, and a failing load in one thread neither disturbs another thread's
load nor leaves its own model changed.

(The GPU part, kernels launched on several CUDA streams, is tests/gpu/test_streams_gpu.py.)
"""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

import _robust_common as rc
from _robust_formats import PARENT, build_case
from qlinear.loading import CheckpointError, load_checkpoint, save_checkpoint

pytest.importorskip("compressed_tensors")

FORMATS = ["gptq", "awq", "fp8-block", "fp8-tensor", "ct-int", "dense"]
ROUNDS = 3


class Model(nn.Module):
    def __init__(self, merged, single):
        super().__init__()
        self.attn = merged.make_layer(f"{PARENT}.fused_qkv_a_proj")
        self.mlp = single.make_layer("model.layers.0.mlp.down_proj")


def _cases(fmt, seed):
    merged = build_case(fmt, seed, n_shards=3)
    single = build_case(fmt, seed + 1, n_shards=1, **{k: v for k, v in merged.choices.items() if k != "sizes"})
    single.names = ["down_proj"]
    return merged, single


def _write(merged, single, path):
    tensors = merged.checkpoint()
    tensors.update({f"model.layers.0.mlp.down_proj.{k}": v for k, v in single.shards[0].items()})
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    save_checkpoint(tensors, path, max_shard_bytes=total // 3 + 1)
    return path


def _run_threads(work, n):
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a loading thread hung"
    if errors:
        raise errors[0]


def test_threads_loading_different_models_match_serial(tmp_path):
    jobs = []
    for i, fmt in enumerate(FORMATS):
        merged, single = _cases(fmt, 100 + i)
        path = _write(merged, single, tmp_path / fmt)
        serial = Model(merged, single)
        load_checkpoint(serial, path)
        jobs.append((merged, single, path, serial))

    results: dict[tuple[int, int], Model] = {}

    def work(i):
        merged, single, path, _ = jobs[i]
        for r in range(ROUNDS):
            model = Model(merged, single)
            report = load_checkpoint(model, path)
            assert report.ok
            results[(i, r)] = model

    _run_threads(work, len(jobs))
    for (i, _), model in results.items():
        merged, _, _, serial = jobs[i]
        rc.assert_models_equal(model, serial)
        x = torch.randn(2, merged.k, generator=rc.gen(i)).to(merged.dtype)
        assert torch.equal(rc.bits_of(model.attn(x)), rc.bits_of(serial.attn(x)))


def test_threads_sharing_one_checkpoint(tmp_path):
    """Several threads reading the same files into their own models."""
    merged, single = _cases("gptq", 7)
    path = _write(merged, single, tmp_path / "shared")
    serial = Model(merged, single)
    load_checkpoint(serial, path)
    models = [Model(merged, single) for _ in range(4)]
    _run_threads(lambda i: load_checkpoint(models[i], path), len(models))
    for model in models:
        rc.assert_models_equal(model, serial)


def test_failing_load_beside_a_good_one(tmp_path):
    """Thread A loads a checkpoint whose g_idx fails while finishing (undone), thread B loads a good
    one at the same time: B's model equals the serial load, A's model is exactly as before."""
    merged, single = _cases("gptq", 9)
    good = _write(merged, single, tmp_path / "good")
    g_idx_case = build_case("gptq", 21, n_shards=3, bits=4, group=16, sym=False, desc_act=True, sizes=[16, 8, 5], k=64)
    g_idx_single = build_case("gptq", 22, n_shards=1, bits=4, group=16, sym=False, desc_act=True, k=64)
    g_idx_single.names = ["down_proj"]
    g_idx_case.shards[1]["g_idx"] = torch.full_like(g_idx_case.shards[1]["g_idx"], 3)  # every column in one group
    bad = _write(g_idx_case, g_idx_single, tmp_path / "bad")

    serial = Model(merged, single)
    load_checkpoint(serial, good)
    for _ in range(ROUNDS):
        victim, other = Model(g_idx_case, g_idx_single), Model(merged, single)
        before = rc.snapshot(victim)
        outcome: dict[str, object] = {}

        def work(i):
            if i == 0:
                try:
                    load_checkpoint(victim, bad)
                except CheckpointError as e:
                    outcome["error"] = e
            else:
                outcome["report"] = load_checkpoint(other, good)

        _run_threads(work, 2)
        assert "error" in outcome and "every change was undone" in str(outcome["error"])
        rc.assert_same(victim, before)
        rc.assert_models_equal(other, serial)
