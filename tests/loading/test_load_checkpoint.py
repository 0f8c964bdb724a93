"""load_checkpoint on good checkpoints: layouts, name mapping, formats, report, staging/undo.

Every forward is compared with an independent fp32 reference ``x @ W^T + b`` built from the
tensors written to disk (or, for quantized formats, from the producer's own dequantization).
"""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from qlinear.layers import MergedReplicatedLinear, ReplicatedLinear
from qlinear.loading import CheckpointError, LoadReport, load_checkpoint, save_checkpoint
from qlinear.loading import checkpoint as checkpoint_module
from qlinear.quantization import get_quantization_config

PARENT = "model.layers.0.self_attn"
SHARDS = ["q_a_proj", "kv_a_proj_with_mqa"]
FUSED = {"fused_qkv_a_proj": SHARDS}
K = 56
SIZES = [40, 24]
LAYOUTS = ["file", "dir", "sharded", "index-path"]
DTYPES = [torch.float32, torch.bfloat16]


class Norm(nn.Module):
    """A user's module with a plain nn.Parameter (default loader: shape check, float cast)."""

    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n))


class Block(nn.Module):
    def __init__(self, params_dtype, *, shard_names=None, quant_config=None, bias=True):
        super().__init__()
        self.self_attn = nn.Module()
        self.self_attn.fused_qkv_a_proj = MergedReplicatedLinear(
            K, SIZES, bias=bias, params_dtype=params_dtype, prefix=f"{PARENT}.fused_qkv_a_proj",
            shard_names=shard_names, quant_config=quant_config,
        )
        self.input_layernorm = Norm(K)


class Model(nn.Module):
    def __init__(self, params_dtype=torch.float32, **kwargs):
        super().__init__()
        self.model = nn.Module()
        self.model.layers = nn.ModuleList([Block(params_dtype, **kwargs)])

    @property
    def layer(self) -> MergedReplicatedLinear:
        return self.model.layers[0].self_attn.fused_qkv_a_proj


def fill(model: nn.Module, seed: int = 0) -> None:
    """Deterministic, non-zero contents, so that 'unchanged' and 'restored' mean something."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in list(model.parameters()) + list(model.buffers()):
            if p.dtype.is_floating_point and p.dtype.itemsize > 1:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                p.view(torch.uint8).copy_(torch.randint(0, 120, p.view(torch.uint8).shape, generator=gen, dtype=torch.uint8))


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    tensors = dict(model.named_parameters())
    tensors.update({f"buffer:{n}": b for n, b in model.named_buffers()})
    return {n: t.detach().clone() for n, t in tensors.items()}


def assert_unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = snapshot(model)
    assert sorted(after) == sorted(before), "parameters / buffers were added or removed"
    for name, t in before.items():
        assert t.dtype == after[name].dtype and t.shape == after[name].shape, name
        assert torch.equal(t.view(torch.uint8), after[name].view(torch.uint8)), f"{name} changed"


def dense_tensors(seed: int = 1, *, weight_dtype=torch.bfloat16) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for shard, n in zip(SHARDS, SIZES):
        out[f"{PARENT}.{shard}.weight"] = torch.randn(n, K, generator=gen).to(weight_dtype)
        out[f"{PARENT}.{shard}.bias"] = torch.randn(n, generator=gen).to(weight_dtype)
    out["model.layers.0.input_layernorm.weight"] = torch.randn(K, generator=gen).to(torch.bfloat16)
    return out


def reference(tensors: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    w = torch.cat([tensors[f"{PARENT}.{s}.weight"].float() for s in SHARDS])
    b = torch.cat([tensors[f"{PARENT}.{s}.bias"].float() for s in SHARDS])
    return x.float() @ w.T + b


def write(tensors, tmp_path, layout: str, config=None):
    if layout == "file":
        save_checkpoint(tensors, tmp_path / "ckpt.safetensors", config=config)
        return tmp_path / "ckpt.safetensors"
    if layout == "dir":
        save_checkpoint(tensors, tmp_path / "ckpt", config=config)
        return tmp_path / "ckpt"
    # the first tensor alone in the first file (q_a_proj.weight: its bias goes to the second)
    first = next(iter(tensors.values()))
    files = save_checkpoint(tensors, tmp_path / "ckpt", max_shard_bytes=first.numel() * first.element_size() + 8, config=config)
    assert len(files) >= 2
    return tmp_path / "ckpt" / "model.safetensors.index.json" if layout == "index-path" else tmp_path / "ckpt"


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


@pytest.mark.parametrize("params_dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_load_and_match_reference(tmp_path, layout, params_dtype):
    tensors = dense_tensors()
    path = write(tensors, tmp_path, layout)
    model = Model(params_dtype)
    fill(model)
    report = load_checkpoint(model, path, fused_modules=FUSED)
    assert isinstance(report, LoadReport) and report.ok, str(report)
    assert sorted(report.loaded) == sorted(tensors)
    assert report.missing == [] and report.unexpected == [] and report.skipped == {}
    assert report.finished == ["model.layers.0.self_attn.fused_qkv_a_proj"]
    assert model.layer.weights_finished
    # the plain parameter took the bf16 tensor, cast exactly
    norm = model.model.layers[0].input_layernorm.weight
    assert torch.equal(norm.float(), tensors["model.layers.0.input_layernorm.weight"].float())
    x = torch.randn(7, K).to(params_dtype)
    tol = 1e-6 if params_dtype == torch.float32 else 1e-2
    assert rel_err(model.layer(x).float(), reference(tensors, x)) < tol
    if layout in ("sharded", "index-path"):
        assert len(report.files) >= 2
        q_w, q_b = report.loaded[f"{PARENT}.q_a_proj.weight"], report.loaded[f"{PARENT}.q_a_proj.bias"]
        assert q_w.file != q_b.file, "the fixture must split one module across files"


def test_report_fields(tmp_path):
    tensors = dense_tensors()
    path = write(tensors, tmp_path, "sharded")
    model = Model()
    report = load_checkpoint(model, path, fused_modules=FUSED)
    entry = report.loaded[f"{PARENT}.kv_a_proj_with_mqa.weight"]
    assert entry.param == "model.layers.0.self_attn.fused_qkv_a_proj.weight" and entry.shard == 1
    assert entry.nbytes == SIZES[1] * K * 2
    assert report.loaded[f"{PARENT}.q_a_proj.bias"].shard == 0
    assert report.loaded["model.layers.0.input_layernorm.weight"].shard is None
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    assert report.bytes == total == sum(f.bytes for f in report.files.values())
    assert sum(f.tensors for f in report.files.values()) == len(tensors)
    assert report.seconds > 0 and all(f.seconds >= 0 for f in report.files.values())
    text = str(report)
    assert text.startswith(f"loaded {len(tensors)} tensors") and "from 2 files" in text and "missing" not in text


@pytest.mark.parametrize("how", ["fused_modules", "shard_names", "both"])
def test_shard_names_from_layer_or_argument(tmp_path, how):
    tensors = dense_tensors()
    path = write(tensors, tmp_path, "dir")
    model = Model(shard_names=SHARDS if how != "fused_modules" else None)
    fused = FUSED if how != "shard_names" else None
    report = load_checkpoint(model, path, fused_modules=fused)
    assert report.ok
    x = torch.randn(3, K)
    assert rel_err(model.layer(x), reference(tensors, x)) < 1e-6


def test_fused_modules_full_path_key(tmp_path):
    tensors = dense_tensors()
    path = write(tensors, tmp_path, "file")
    model = Model()
    assert load_checkpoint(model, path, fused_modules={f"{PARENT}.fused_qkv_a_proj": SHARDS}).ok


@pytest.mark.parametrize("fused_param", ["weight", "bias", "both"])
def test_fused_on_disk(tmp_path, fused_param):
    tensors = dense_tensors()
    disk = dict(tensors)
    for p in (["weight", "bias"] if fused_param == "both" else [fused_param]):
        parts = [disk.pop(f"{PARENT}.{s}.{p}") for s in SHARDS]
        disk[f"{PARENT}.fused_qkv_a_proj.{p}"] = torch.cat(parts)
    path = write(disk, tmp_path, "sharded")
    model = Model()
    report = load_checkpoint(model, path, fused_modules=FUSED)
    assert report.ok
    fused_entries = [e for n, e in report.loaded.items() if ".fused_qkv_a_proj." in n]
    assert fused_entries and all(e.shard is None for e in fused_entries)
    x = torch.randn(5, K)
    assert rel_err(model.layer(x), reference(tensors, x)) < 1e-6


def test_bare_layer_found_by_prefix(tmp_path):
    """A lone layer (the root module) is reached through its prefix, as the selfcheck does."""
    tensors = {k: v for k, v in dense_tensors().items() if "layernorm" not in k}
    path = write(tensors, tmp_path, "file")
    layer = MergedReplicatedLinear(K, SIZES, bias=True, params_dtype=torch.float32, prefix=f"{PARENT}.fused_qkv_a_proj")
    report = load_checkpoint(layer, path, fused_modules=FUSED)
    assert report.ok and report.loaded[f"{PARENT}.q_a_proj.weight"].param == "weight"
    x = torch.randn(2, K)
    assert rel_err(layer(x), reference(tensors, x)) < 1e-6


def test_replicated_linear_and_tied_names(tmp_path):
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(33, K, generator=gen)
    save_checkpoint({"lm_head.weight": w}, tmp_path / "a.safetensors")
    root = nn.Module()
    root.lm_head = ReplicatedLinear(K, 33, params_dtype=torch.float32, prefix="lm_head")
    assert load_checkpoint(root, tmp_path / "a.safetensors").ok
    assert torch.equal(root.lm_head.weight, w)


def _fp8_case(scale_fmt):
    fp8 = pytest.importorskip("qlinear.testing.fp8")
    gen = torch.Generator().manual_seed(5)
    k, sizes = 256, [128, 72]
    weights = [torch.randn(n, k, generator=gen) * 0.1 for n in sizes]
    tensors, deq = {}, []
    for shard, w in zip(SHARDS, weights):
        part = fp8.quantize_fp8_block(w, (128, 128), scale_fmt=scale_fmt)
        deq.append(fp8.dequantize_fp8_block(part["weight"], part["weight_scale_inv"]))
        tensors.update({f"{PARENT}.{shard}.{n}": t for n, t in part.items()})
    return fp8, k, sizes, tensors, torch.cat(deq), fp8.fp8_block_config(scale_fmt=scale_fmt)


@pytest.mark.parametrize("scale_fmt", [None, "ue8m0"])
def test_fp8_block_sharded_with_config(tmp_path, scale_fmt):
    """DeepSeek FP8: e4m3 weights exact, fp32 or e8m0 scales widened into fp32, config.json read."""
    from qlinear.loading import read_quantization_config

    fp8, k, sizes, tensors, w_ref, config = _fp8_case(scale_fmt)
    first = tensors[f"{PARENT}.q_a_proj.weight"]
    save_checkpoint(tensors, tmp_path, max_shard_bytes=first.numel() + 4, config=config)
    qc = get_quantization_config(read_quantization_config(tmp_path))
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.float32, quant_config=qc, prefix=f"{PARENT}.fused_qkv_a_proj")
    report = load_checkpoint(layer, tmp_path, fused_modules=FUSED)
    assert report.ok and len(report.files) >= 2
    x = torch.randn(9, k)
    expected = fp8.fp8_linear_expected(x, w_ref, "group", group_size=128)
    assert rel_err(layer(x), expected) < 1e-5


def _gptq_case(desc_act: bool):
    gptq = pytest.importorskip("qlinear.testing.gptq")
    gen = torch.Generator().manual_seed(7)
    k, sizes = 256, [64, 40]
    tensors, deq = {}, []
    for i, (shard, n) in enumerate(zip(SHARDS, sizes)):
        part, d = gptq.quantize_gptq(torch.randn(n, k, generator=gen), 4, 64, sym=True, desc_act=desc_act, seed=i)
        deq.append(d)
        tensors.update({f"{PARENT}.{shard}.{name}": t for name, t in part.items()})
    qc = get_quantization_config(gptq.gptq_config(4, 64, desc_act=desc_act))
    return k, sizes, tensors, torch.cat(deq), qc


def test_optional_tensor_may_be_absent(tmp_path):
    """GPTQ without act-order: g_idx is required=False, so a checkpoint without it loads."""
    k, sizes, tensors, w_ref, qc = _gptq_case(desc_act=False)
    tensors = {n: t for n, t in tensors.items() if not n.endswith(".g_idx")}
    save_checkpoint(tensors, tmp_path / "m.safetensors")
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.float32, quant_config=qc, prefix=f"{PARENT}.fused_qkv_a_proj")
    report = load_checkpoint(layer, tmp_path / "m.safetensors", fused_modules=FUSED)
    assert report.ok and report.missing == []
    x = torch.randn(4, k)
    assert rel_err(layer(x), x @ w_ref.T) < 1e-5


def test_required_when_act_order(tmp_path):
    k, sizes, tensors, _, qc = _gptq_case(desc_act=True)
    tensors = {n: t for n, t in tensors.items() if not n.endswith("kv_a_proj_with_mqa.g_idx")}
    save_checkpoint(tensors, tmp_path / "m.safetensors")
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.float32, quant_config=qc, prefix=f"{PARENT}.fused_qkv_a_proj")
    with pytest.raises(CheckpointError, match=r"g_idx\[kv_a_proj_with_mqa\]: missing"):
        load_checkpoint(layer, tmp_path / "m.safetensors", fused_modules=FUSED)


def test_strict_false_loads_the_rest_and_reports(tmp_path):
    tensors = dense_tensors()
    tensors.pop(f"{PARENT}.kv_a_proj_with_mqa.bias")
    tensors[f"{PARENT}.q_a_proj.bias"] = torch.randn(SIZES[0] + 1)  # wrong shape
    tensors["model.layers.0.mlp.gate_proj.weight"] = torch.randn(4, 4)  # nobody takes it
    path = write(tensors, tmp_path, "sharded")
    model = Model()
    fill(model)
    report = load_checkpoint(model, path, fused_modules=FUSED, strict=False)
    assert not report.ok
    assert report.unexpected == ["model.layers.0.mlp.gate_proj.weight"]
    assert list(report.skipped) == [f"{PARENT}.q_a_proj.bias"]
    assert "expected shape (40,), got (41,)" in report.skipped[f"{PARENT}.q_a_proj.bias"]
    assert report.missing == [f"{PARENT}.fused_qkv_a_proj.bias[kv_a_proj_with_mqa]"]
    assert len(report.problems) == 3
    # everything else is in place; the layer could not be finished and says why
    assert sorted(report.loaded) == sorted(
        [f"{PARENT}.q_a_proj.weight", f"{PARENT}.kv_a_proj_with_mqa.weight", "model.layers.0.input_layernorm.weight"]
    )
    assert torch.equal(model.layer.weight[: SIZES[0]], tensors[f"{PARENT}.q_a_proj.weight"].float())
    assert list(report.unfinished) == [f"{PARENT}.fused_qkv_a_proj"] and "never loaded" in report.unfinished[f"{PARENT}.fused_qkv_a_proj"]
    assert not model.layer.weights_finished
    text = str(report)
    assert "1 missing, 1 unexpected, 1 skipped, 1 unfinished" in text

    # a second checkpoint with the missing pieces completes the layer
    rest = dense_tensors()
    path2 = tmp_path / "rest.safetensors"
    save_checkpoint({n: rest[n] for n in (f"{PARENT}.kv_a_proj_with_mqa.bias", f"{PARENT}.q_a_proj.bias")}, path2)
    report2 = load_checkpoint(model, path2, fused_modules=FUSED, strict=False)
    assert model.layer.weights_finished and report2.finished == [f"{PARENT}.fused_qkv_a_proj"]
    # QParameters remember which shards arrived earlier; a plain nn.Parameter cannot
    assert report2.missing == ["model.layers.0.input_layernorm.weight"] and not report2.unfinished


def test_reloading_a_finished_layer_is_refused(tmp_path):
    path = write(dense_tensors(), tmp_path, "file")
    model = Model()
    load_checkpoint(model, path, fused_modules=FUSED)
    with pytest.raises(CheckpointError, match="already finished"):
        load_checkpoint(model, path, fused_modules=FUSED)


def test_failure_while_loading_undoes_everything(tmp_path, monkeypatch):
    """A read/loader failure after some tensors were written (pass 2) restores every byte."""
    path = write(dense_tensors(), tmp_path, "sharded")
    model = Model()
    fill(model)
    before = snapshot(model)
    calls = []
    real = checkpoint_module._load_one

    def flaky(target, tensor):
        calls.append(target)
        if len(calls) == 4:
            raise OSError("simulated read error")
        real(target, tensor)

    monkeypatch.setattr(checkpoint_module, "_load_one", flaky)
    with pytest.raises(CheckpointError, match="simulated read error") as info:
        load_checkpoint(model, path, fused_modules=FUSED)
    assert "every change was undone" in str(info.value) and ".safetensors: tensor '" in str(info.value)
    assert_unchanged(model, before)
    assert model.layer.weight.loaded_shards == set() and not model.layer.weights_finished

    calls.clear()
    with pytest.raises(CheckpointError, match="may be partially loaded"):
        load_checkpoint(model, path, fused_modules=FUSED, atomic=False)


def test_bad_g_idx_found_while_loading_is_undone(tmp_path):
    """A data-dependent check (g_idx out of range) only fires in pass 2: undone, file + tensor named."""
    k, sizes, tensors, _, qc = _gptq_case(desc_act=True)
    tensors[f"{PARENT}.kv_a_proj_with_mqa.g_idx"] = tensors[f"{PARENT}.kv_a_proj_with_mqa.g_idx"] + 100
    save_checkpoint(tensors, tmp_path / "m.safetensors")
    layer = MergedReplicatedLinear(k, sizes, params_dtype=torch.float32, quant_config=qc, prefix=f"{PARENT}.fused_qkv_a_proj")
    fill(layer)
    before = snapshot(layer)
    with pytest.raises(CheckpointError, match=r"m\.safetensors: tensor 'model\.layers\.0\.self_attn\.kv_a_proj_with_mqa\.g_idx'.*group indices"):
        load_checkpoint(layer, tmp_path / "m.safetensors", fused_modules=FUSED)
    assert_unchanged(layer, before)


class Finicky(nn.Module):
    """A module whose finisher changes things, then fails (a data-dependent check)."""

    def __init__(self, fail: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(6, 5))
        self.fail = fail

    def process_weights_after_loading(self):
        with torch.no_grad():
            self.weight.mul_(2)
        self.register_buffer("packed", torch.ones(3))
        if self.fail:
            raise ValueError("weight: scales must be positive")


@pytest.mark.parametrize("strict", [True, False])
def test_failure_while_finishing_is_undone(tmp_path, strict):
    root = nn.Module()
    root.good = Finicky(fail=False)
    root.bad = Finicky(fail=True)
    fill(root)
    before = snapshot(root)
    good_w, bad_w = torch.randn(6, 5), torch.randn(6, 5)
    save_checkpoint({"good.weight": good_w, "bad.weight": bad_w}, tmp_path / "f.safetensors")
    if strict:
        with pytest.raises(CheckpointError, match="bad: process_weights_after_loading failed: ValueError: weight: scales must be positive"):
            load_checkpoint(root, tmp_path / "f.safetensors")
        assert_unchanged(root, before)  # the finished module is undone too
    else:
        report = load_checkpoint(root, tmp_path / "f.safetensors", strict=False)
        assert report.finished == ["good"] and list(report.unfinished) == ["bad"]
        assert "packed" not in dict(root.bad.named_buffers())
        # bad keeps what was loaded, without the finisher's half-done changes; good is finished
        assert torch.equal(root.bad.weight, bad_w)
        assert torch.equal(root.good.weight, 2 * good_w) and hasattr(root.good, "packed")


def test_progress_bar_forced(tmp_path, capsys):
    path = write(dense_tensors(), tmp_path, "file")
    load_checkpoint(Model(), path, fused_modules=FUSED, progress=True)
    err = capsys.readouterr().err
    assert "loading 5 tensors" in err
    load_checkpoint(Model(), path, fused_modules=FUSED)  # small and not a terminal: no bar
    assert capsys.readouterr().err == ""


def test_two_threads_load_different_models(tmp_path):
    paths, tensors = [], []
    for i in range(2):
        tensors.append(dense_tensors(seed=10 + i))
        paths.append(write(tensors[-1], tmp_path / f"m{i}", "sharded"))
    models = [Model(), Model()]
    errors = []

    def work(i):
        try:
            for _ in range(3):
                models[i] = Model()
                load_checkpoint(models[i], paths[i], fused_modules=FUSED)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    x = torch.randn(3, K)
    for i in range(2):
        assert rel_err(models[i].layer(x), reference(tensors[i], x)) < 1e-6
