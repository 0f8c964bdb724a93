"""Tensor parallelism over gloo: 2 and 4 processes, every format, against the one-process layer.

The parent (pytest) writes each case's checkpoint tensors with the formats' own producers
(``qlinear.testing``), computes the replicated layer's output, and spawns ``world`` gloo
processes once per world size. Every rank builds the parallel layer, loads the same tensors
(through ``weight_loader`` and through ``load_checkpoint``), runs forward and writes its output;
the tests compare gathered / reduced outputs with the replicated ones (relative error <= 1e-5,
fp32 compute), and check that misaligned sharding raises the same message on every rank.

Bounded: gloo collectives time out after 60 s and the parent kills the workers after
``DEADLINE_S``; a rank that fails before a collective tells the others first (an all-reduced
flag), so one broken case never hangs the rest.
"""

from __future__ import annotations

import datetime
import os
import re
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from qlinear.layers import MergedReplicatedLinear
from qlinear.quantization import get_quantization_config

WORLDS = [2, 4]
DEADLINE_S = 240
TOL = 1e-5


# ---------------------------------------------------------------------------------------------
# Cases: built in the parent, shipped to the workers in one torch.save file
# ---------------------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    kind: str  # "merged" | "qkv" | "column" | "row"
    input_size: int
    shards: list[str]  # checkpoint module names of the fused shards (one for column / row)
    sizes: list[int]
    config: dict | None
    tensors: dict[str, dict[str, torch.Tensor]]  # shard module -> checkpoint param -> tensor
    kwargs: dict[str, Any] = field(default_factory=dict)
    expect_error: str | None = None  # regex every rank's construction error must match
    x: torch.Tensor | None = None
    expected: torch.Tensor | None = None

    @property
    def prefix(self) -> str:
        return {"merged": "model.layers.0.mlp.gate_up_proj", "qkv": "model.layers.0.self_attn.qkv_proj",
                "column": "model.layers.0.mlp.up_proj", "row": "model.layers.0.mlp.down_proj"}[self.kind]

    def checkpoint(self) -> dict[str, torch.Tensor]:
        parent = self.prefix.rpartition(".")[0]
        return {f"{parent}.{m}.{p}": t for m, ts in self.tensors.items() for p, t in ts.items()}


def _w(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(n, k, generator=gen) / k**0.5


def _producer(fmt: str):
    """fmt -> (config dict, fn(w [N, K]) -> checkpoint tensors of one module)."""
    if fmt == "unquantized":
        return None, lambda w: {"weight": w}
    if fmt == "fp8-block":
        from qlinear.testing.fp8 import fp8_block_config, quantize_fp8_block
        return fp8_block_config((128, 128)), lambda w: quantize_fp8_block(w, (128, 128))
    if fmt == "fp8-tensor-static":
        from qlinear.testing.fp8 import fp8_tensor_config, quantize_fp8_tensor
        # input_scale: calibrated for |x| <= 4 (the test inputs are well inside)
        return fp8_tensor_config("static"), lambda w: {**quantize_fp8_tensor(w), "input_scale": torch.tensor(4.0 / 448)}
    if fmt.startswith("gptq"):
        from qlinear.testing.gptq import gptq_config, quantize_gptq
        act = fmt.endswith("act-order")
        return gptq_config(4, 32, desc_act=act), lambda w: quantize_gptq(w, 4, 32, desc_act=act, seed=int(w.shape[0]))[0]
    if fmt == "awq":
        from qlinear.testing.awq import awq_config, quantize_awq
        return awq_config(32), lambda w: quantize_awq(w, 32)[0]
    raise KeyError(fmt)


_CT_FORMATS = {"ct-w4a16": ("W4A16", {"group_size": 32}), "ct-w4a16-asym": ("W4A16_ASYM", {"group_size": 32}),
               "ct-fp8-block": ("FP8_BLOCK", None), "ct-fp8-static": ("FP8", None)}


def _make(name, kind, fmt, input_size, sizes, gen, *, shards=None, bias=False, **kwargs) -> Case:
    shards = shards or {"merged": ["gate_proj", "up_proj"], "qkv": ["q_proj", "k_proj", "v_proj"],
                        "column": ["up_proj"], "row": ["down_proj"]}[kind]
    ws = {m: _w(n, input_size, gen) for m, n in zip(shards, sizes)}
    if fmt in _CT_FORMATS:
        from qlinear.testing.compressed_tensors import make_ct_checkpoint
        scheme, args = _CT_FORMATS[fmt]
        parent = "model.layers.0." + ("self_attn" if kind == "qkv" else "mlp")
        ckpt = make_ct_checkpoint({f"{parent}.{m}": w for m, w in ws.items()}, scheme, dtype=torch.float32,
                                  weight_args=args)
        config = ckpt.config
        tensors = {m: {k[len(parent) + len(m) + 2:]: v for k, v in ckpt.state_dict.items() if k.startswith(f"{parent}.{m}.")}
                   for m in shards}
    else:
        config, quantize = _producer(fmt)
        tensors = {m: quantize(w) for m, w in ws.items()}
    if bias:
        for m, n in zip(shards, sizes):
            tensors[m]["bias"] = torch.randn(n, generator=gen)
    return Case(name, kind, input_size, shards, list(sizes), config, tensors, kwargs={"bias": bias, **kwargs})


def build_cases(world: int, include_ct: bool = True) -> list[Case]:
    """Valid cases sized so that ``world`` ranks hold whole packs / blocks / groups, then the
    misaligned ones. Odd sizes where the format allows them (K ragged in the last block).
    ``benchmarks/gpu_tp.sh`` reuses this with ``include_ct=False``."""
    gen = torch.Generator().manual_seed(1234 + world)
    w = world
    cases = [
        _make("unquantized-merged", "merged", "unquantized", 72, [24 * w, 40 * w], gen, bias=True),
        _make("unquantized-qkv-gqa", "qkv", "unquantized", 48, [8 * 8, 2 * 8, 2 * 8], gen, bias=True,
              head_size=8, total_num_heads=8, total_num_kv_heads=2),
        _make("unquantized-qkv-mqa", "qkv", "unquantized", 48, [4 * 8, 8, 8], gen,
              head_size=8, total_num_heads=4, total_num_kv_heads=1),
        _make("unquantized-column-local", "column", "unquantized", 40, [12 * w], gen, bias=True, gather_output=False),
        _make("unquantized-row", "row", "unquantized", 24 * w, [56], gen, bias=True, input_is_parallel=False),
        _make("unquantized-row-partial", "row", "unquantized", 24 * w, [56], gen, bias=True, reduce_results=False),
        _make("fp8-block-merged", "merged", "fp8-block", 320, [128 * w, 256 * w], gen, bias=True),
        _make("fp8-block-qkv", "qkv", "fp8-block", 192, [4 * 128, 128, 128], gen,
              head_size=128, total_num_heads=4, total_num_kv_heads=1),
        _make("fp8-block-row", "row", "fp8-block", 128 * w, [200], gen, bias=True, input_is_parallel=False),
        _make("fp8-tensor-merged", "merged", "fp8-tensor-static", 64, [16 * w, 24 * w], gen),
        _make("fp8-tensor-row", "row", "fp8-tensor-static", 32 * w, [40], gen, input_is_parallel=False),
        _make("gptq-merged", "merged", "gptq", 96, [16 * w, 24 * w], gen, bias=True),
        _make("gptq-act-order-merged", "merged", "gptq-act-order", 96, [16 * w, 8 * w], gen),
        _make("gptq-row", "row", "gptq", 32 * w, [48], gen, input_is_parallel=False),
        _make("gptq-act-order-row", "row", "gptq-act-order", 32 * w, [48], gen, input_is_parallel=False),
        _make("awq-merged", "merged", "awq", 64, [8 * w, 16 * w], gen),
        _make("awq-row", "row", "awq", 32 * w, [24], gen, bias=True, input_is_parallel=False),
    ]
    if include_ct:  # compressed-tensors' own compressor writes these (absent on the GPU image)
        cases += [
            _make("ct-w4a16-merged", "merged", "ct-w4a16", 64, [8 * w, 16 * w], gen),
            _make("ct-w4a16-asym-merged", "merged", "ct-w4a16-asym", 64, [8 * w, 16 * w], gen),
            _make("ct-w4a16-row", "row", "ct-w4a16", 32 * w, [40], gen, input_is_parallel=False),
            _make("ct-fp8-block-merged", "merged", "ct-fp8-block", 200, [128 * w, 128 * w], gen),
            _make("ct-fp8-static-qkv", "qkv", "ct-fp8-static", 48, [8 * 8, 2 * 8, 2 * 8], gen,
                  head_size=8, total_num_heads=8, total_num_kv_heads=2),
        ]
    bad = [
        # a rank's slice of 128 // world rows of a 128-row block-scaled matrix
        ("bad-fp8-block-rows", _make("bad-fp8-block-rows", "column", "fp8-block", 256, [128], gen),
         rf"model\.layers\.0\.mlp\.up_proj: tensor-parallel rank 0/{w} would hold rows \[0, {128 // w}\) of shard 0 "
         rf"\(128 rows\): a slice of {128 // w} rows starting at row 0 is not whole 128-row units "
         rf"\(fp8-block weight_block_size=\[128, 128\]: block_n=128\)"),
        ("bad-fp8-block-cols", _make("bad-fp8-block-cols", "row", "fp8-block", 64 * w, [128], gen),
         rf"rank 0/{w} would hold input columns \[0, 64\) of {64 * w}: a slice of 64 columns starting at column 0 "
         rf"is not whole 128-column units \(fp8-block weight_block_size=\[128, 128\]: block_k=128\)"),
        ("bad-gptq-pack", _make("bad-gptq-pack", "merged", "gptq", 64, [4 * w, 8 * w], gen),
         rf"rank 0/{w} would hold rows \[0, 4\) of shard 0 'gate_proj' \({4 * w} rows\): a slice of 4 rows .*"
         rf"\(gptq-w4a16 output alignment 8\)"),
        ("bad-awq-group", _make("bad-awq-group", "row", "awq", 16 * w, [16], gen),
         rf"rank 0/{w} would hold input columns \[0, 16\) of {16 * w}: .*not whole 32-column units"),
        ("bad-heads", Case("bad-heads", "qkv", 32, ["q_proj", "k_proj", "v_proj"], [(w + 1) * 8, 8, 8], None, {},
                           kwargs={"head_size": 8, "total_num_heads": w + 1, "total_num_kv_heads": 1}),
         rf"shard 0 'q_proj' \({w + 1} heads\) cannot be split over {w} tensor-parallel ranks"),
    ]
    for name, case, pattern in bad:
        case.expect_error = pattern
    cases += [c for _, c, _ in bad]
    for case in cases:
        if case.expect_error is None:
            k = case.input_size
            case.x = (torch.rand(3, 2, k, generator=gen) * 6 - 3)  # |x| < 4: inside the static FP8 input scale
            case.expected = _replicated_output(case)
    return cases


def _replicated_output(case: Case, device: str = "cpu") -> torch.Tensor:
    """The one-process reference: ``MergedReplicatedLinear`` with the same tensors."""
    with torch.device(device):
        return _replicated_here(case, device)


def _replicated_here(case: Case, device: str) -> torch.Tensor:
    cfg = get_quantization_config(case.config) if case.config else None
    layer = MergedReplicatedLinear(case.input_size, case.sizes, bias=case.kwargs.get("bias", False),
                                   params_dtype=torch.float32, quant_config=cfg, prefix=case.prefix,
                                   shard_names=case.shards if len(case.shards) > 1 else None)
    _load(layer, case, shard_ids=list(range(len(case.shards))) if len(case.shards) > 1 else [None])
    return layer(case.x.to(device)).cpu()


def _load(layer, case: Case, shard_ids) -> None:
    for sid, module in zip(shard_ids, case.shards):
        for name, t in case.tensors[module].items():
            param = getattr(layer, name)
            param.weight_loader(param, t, sid)
    layer.process_weights_after_loading()


# ---------------------------------------------------------------------------------------------
# Worker: one process of the gloo group
# ---------------------------------------------------------------------------------------------
def _build(case: Case):
    from qlinear.layers.parallel import ColumnParallelLinear, MergedColumnParallelLinear, QKVParallelLinear, RowParallelLinear

    cfg = get_quantization_config(case.config) if case.config else None
    common = dict(params_dtype=torch.float32, quant_config=cfg, prefix=case.prefix)
    kw = dict(case.kwargs)
    if case.kind == "merged":
        return MergedColumnParallelLinear(case.input_size, case.sizes, gather_output=True, shard_names=case.shards, **common, **kw)
    if case.kind == "qkv":
        return QKVParallelLinear(case.input_size, gather_output=True, shard_names=case.shards, **common, **kw)
    if case.kind == "column":
        return ColumnParallelLinear(case.input_size, case.sizes[0], **common, **kw)
    return RowParallelLinear(case.input_size, case.sizes[0], **common, **kw)


def _agree(ok: bool, device: str) -> bool:
    """True when every rank is ok; a collective every rank reaches, so nobody waits alone."""
    flag = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(flag)
    return int(flag.item()) == 0


def _forward(layer, case: Case, device: str) -> torch.Tensor:
    x = case.x.to(device)
    if case.kind == "row" and layer.input_is_parallel:
        x = x.narrow(-1, layer.shard_plan.input_start, layer.shard_plan.local_input)
    return layer(x).cpu()


def _run_case(case: Case, ckpt_dir: Path, device: str = "cpu") -> dict[str, Any]:
    """Build, load (both ways) and run one case on this rank; NCCL callers pass ``cuda:<rank>``."""
    with torch.device(device):  # parameters, plans' buffers and packed weights on this rank's device
        return _run_case_here(case, ckpt_dir, device)


def _run_case_here(case: Case, ckpt_dir: Path, device: str) -> dict[str, Any]:
    from qlinear.loading import load_checkpoint

    res: dict[str, Any] = {}
    err = None
    try:
        layer = _build(case)
    except Exception as e:  # the expected refusals land here
        err, layer = f"{type(e).__name__}: {e}", None
    if case.expect_error is not None:
        res["error"] = err
        dist.barrier()  # every rank got here: refusing did not hang the group
        return res
    for via in ("weight_loader", "load_checkpoint"):
        try:
            if layer is None or via == "load_checkpoint":
                layer = _build(case)
            if via == "weight_loader":
                ids = ["q", "k", "v"] if case.kind == "qkv" else (list(range(len(case.shards))) if len(case.shards) > 1 else [None])
                _load(layer, case, ids)
            else:
                model = torch.nn.Module()
                model.add_module("tp", layer)
                load_checkpoint(model, ckpt_dir / f"{case.name}.safetensors", strict=True)
            err = None
        except Exception:
            err = traceback.format_exc(limit=4)
        if not _agree(err is None, device):
            res[f"error_{via}"] = err or "another rank failed"
            continue
        try:
            res[via] = _forward(layer, case, device).detach().clone()
        except Exception:
            res[f"error_{via}"] = traceback.format_exc(limit=4)
    return res


def _worker(rank: int, world: int, store_file: str, case_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    # A file store in the run's private directory: no TCP port to pick and release.
    dist.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        cases = torch.load(case_file, weights_only=False)
        results = {c.name: _run_case(c, Path(out_dir)) for c in cases}
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    # A finished rank leaves without interpreter finalization. With torch 2.13 a C++ thread can
    # still be calling into Python then; finalization ends that thread with a forced unwind that
    # hits std::terminate (SIGABRT after destroy_process_group returned: 2 of 75 runs on 2 cores).
    # Its results are on disk and every rank passed the barrier, so nothing is lost by skipping it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _spawn(world: int, case_file: Path, out_dir: Path) -> None:
    store = out_dir / "gloo_store"
    ctx = mp.start_processes(_worker, args=(world, str(store), str(case_file), str(out_dir)), nprocs=world,
                             join=False, start_method="spawn")
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                pytest.fail(f"{world} gloo workers still running after {DEADLINE_S} s")
    finally:
        for p in ctx.processes:  # only our own children, by handle
            if p.is_alive():
                p.kill()


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"world{w}")
def tp_run(request):
    # A private directory, not tmp_path_factory: pytest runs started meanwhile rotate those away.
    with tempfile.TemporaryDirectory(prefix=f"qlinear-tp{request.param}-") as tmp:
        yield _run_world(request.param, Path(tmp))


def _run_world(world: int, tmp: Path):
    from qlinear.loading import save_checkpoint

    cases = build_cases(world)
    for case in cases:
        if case.expect_error is None:
            save_checkpoint(case.checkpoint(), tmp / f"{case.name}.safetensors")
    torch.save(cases, tmp / "cases.pt")
    t0 = time.perf_counter()
    _spawn(world, tmp / "cases.pt", tmp)
    results = [torch.load(tmp / f"rank{r}.pt", weights_only=False) for r in range(world)]
    print(f"\n{world} gloo workers: {time.perf_counter() - t0:.1f} s")
    return world, {c.name: c for c in cases}, {c.name: [res[c.name] for res in results] for c in cases}


CASE_NAMES = [
    "unquantized-merged", "unquantized-qkv-gqa", "unquantized-qkv-mqa", "unquantized-column-local", "unquantized-row",
    "unquantized-row-partial", "fp8-block-merged", "fp8-block-qkv", "fp8-block-row", "fp8-tensor-merged",
    "fp8-tensor-row", "gptq-merged", "gptq-act-order-merged", "gptq-row", "gptq-act-order-row", "awq-merged",
    "awq-row", "ct-w4a16-merged", "ct-w4a16-asym-merged", "ct-w4a16-row", "ct-fp8-block-merged", "ct-fp8-static-qkv",
]
BAD_NAMES = ["bad-fp8-block-rows", "bad-fp8-block-cols", "bad-gptq-pack", "bad-awq-group", "bad-heads"]
# Refused by design: act-order scatters every GPTQ group over K, so a K slice cannot be packed.
REFUSED = {"gptq-act-order-row": "GPTQ act-order (desc_act=true) cannot be split along the input"}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize("via", ["weight_loader", "load_checkpoint"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_tp_matches_replicated(tp_run, name, via):
    world, cases, by_case = tp_run
    case, results = cases[name], by_case[name]
    if name in REFUSED:  # every rank refuses with the same clear message, none hangs
        for r, res in enumerate(results):
            assert REFUSED[name] in res.get(f"error_{via}", ""), f"rank {r}: {res}"
        return
    for r, res in enumerate(results):
        assert f"error_{via}" not in res, f"rank {r}: {res[f'error_{via}']}"
    outs = [res[via] for res in results]
    if case.kind == "row" and not case.kwargs.get("reduce_results", True):
        assert _rel(sum(outs), case.expected) <= TOL  # partial products; bias on rank 0 only
        return
    if case.kind == "column" and not case.kwargs.get("gather_output", False):
        from qlinear.layers.parallel import column_parallel_plans
        for r, (out, plan) in enumerate(zip(outs, column_parallel_plans(case.sizes, case.input_size, world))):
            start, size = plan.local_starts[0], plan.local_sizes[0]
            assert _rel(out, case.expected[..., start:start + size]) <= TOL, f"rank {r}"
        return
    for r, out in enumerate(outs):
        assert out.shape == case.expected.shape, f"rank {r}: {tuple(out.shape)} != {tuple(case.expected.shape)}"
        assert _rel(out, case.expected) <= TOL, f"rank {r}: rel err {_rel(out, case.expected):.3g}"
    assert all(torch.equal(outs[0], o) for o in outs[1:]), "ranks disagree"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_misaligned_sharding_raises_on_every_rank(tp_run, name):
    world, cases, by_case = tp_run
    errors = [res["error"] for res in by_case[name]]
    for r, err in enumerate(errors):
        assert err is not None, f"rank {r} built the layer"
        assert re.search(cases[name].expect_error, err), f"rank {r}: {err}"
    assert len(set(errors)) == 1, f"ranks raised different errors: {errors}"
