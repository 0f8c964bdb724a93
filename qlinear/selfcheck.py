"""``python -m qlinear selfcheck``: every checkpoint format, end to end, in one table.

For each format: quantize a small DeepSeek-style MLA pair (``model.layers.0.self_attn.q_a_proj``
and ``kv_a_proj_with_mqa``, K=512 -> [256, 72] by default, the real 7168 -> [1536, 576] with
``--full``; the last shard is not a multiple of 128) with the format's producer from
``qlinear.testing``, write it as a sharded safetensors checkpoint (one module's tensors
straddling two files) with the format's ``quantization_config`` in ``config.json``, then do
what an inference framework does::

    qc = get_quantization_config(read_quantization_config(dir))
    layer = MergedReplicatedLinear(K, [n0, n1], quant_config=qc, prefix=...fused_qkv_a_proj)
    load_checkpoint(layer, dir, fused_modules={"fused_qkv_a_proj": ["q_a_proj", "kv_a_proj_with_mqa"]})
    y = layer(x)

and compare ``y`` with the fp32 reference ``a(x) @ W^T``: ``W`` is the producer's own
dequantization of the checkpoint tensors, ``a`` the activation quantization the format
prescribes (fp8 formats: per token group / per token / static, as ``qlinear.testing.fp8``
defines it; identity otherwise). Relative error ``||y - ref|| / ||ref||`` must be <= 1e-2 in
bf16 / fp16 compute and <= 1e-5 in fp32. A format whose producer module or config class is
not there fails its row with the error; the exit status is 1 when any row fails.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import torch

from qlinear.layers import MergedReplicatedLinear
from qlinear.loading import load_checkpoint, read_quantization_config, save_checkpoint
from qlinear.quantization import get_quantization_config

__all__ = ["FORMATS", "Row", "run_selfcheck", "main"]

PARENT = "model.layers.0.self_attn"
SHARDS = ("q_a_proj", "kv_a_proj_with_mqa")
FUSED_NAME = "fused_qkv_a_proj"
FUSED = {FUSED_NAME: list(SHARDS)}
SMALL = (512, (256, 72))
FULL = (7168, (1536, 576))
THRESHOLDS = {torch.bfloat16: 1e-2, torch.float16: 1e-2, torch.float32: 1e-5}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class Case:
    """One format's checkpoint: tensors by checkpoint name, config, fp32 weight per shard and
    the activation quantization the reference applies (None: identity)."""

    tensors: dict[str, torch.Tensor]
    config: dict | None
    weights: list[torch.Tensor]
    activation: Callable[[torch.Tensor], torch.Tensor] | None = None


@dataclass
class Row:
    format: str
    quant_method: str
    shapes: str
    dtype: str
    device: str
    rel_error: float | None
    threshold: float
    backend: str
    method: str
    load_s: float | None
    files: int
    ok: bool
    error: str = ""
    traceback: str = ""


def _testing(name: str):
    """A producer module of ``qlinear.testing``, imported when its rows run, so that one missing
    or broken producer fails its own rows instead of the whole selfcheck."""
    return importlib.import_module(f"qlinear.testing.{name}")


def _names(param: str) -> list[str]:
    return [f"{PARENT}.{s}.{param}" for s in SHARDS]


def _per_shard(weights: Sequence[torch.Tensor], quantize) -> tuple[dict[str, torch.Tensor], list[dict[str, torch.Tensor]]]:
    """Run ``quantize(w, i) -> {param: tensor}`` on each shard; checkpoint tensors + per-shard dicts."""
    tensors, parts = {}, []
    for i, (shard, w) in enumerate(zip(SHARDS, weights)):
        part = quantize(w, i)
        parts.append(part)
        tensors.update({f"{PARENT}.{shard}.{k}": v for k, v in part.items()})
    return tensors, parts


# -- producers: (weights fp32 per shard, x fp32 sample) -> Case -------------------------------------


def _unquantized(weights, x):
    tensors = {f"{PARENT}.{s}.weight": w.to(torch.bfloat16) for s, w in zip(SHARDS, weights)}
    return Case(tensors, None, [w.to(torch.bfloat16).float() for w in weights])


def _fp8_block(scale_fmt):
    def build(weights, x):
        fp8 = _testing("fp8")
        tensors, parts = _per_shard(weights, lambda w, i: fp8.quantize_fp8_block(w, (128, 128), scale_fmt=scale_fmt))
        deq = [fp8.dequantize_fp8_block(p["weight"], p["weight_scale_inv"], (128, 128)) for p in parts]
        act = lambda a: fp8.fake_quant_activations(a, "group", group_size=128)  # noqa: E731
        return Case(tensors, fp8.fp8_block_config((128, 128), scale_fmt=scale_fmt), deq, act)

    return build


def _fp8_tensor(static: bool):
    def build(weights, x):
        fp8 = _testing("fp8")
        input_scale = fp8.input_scale_for(x)

        def quantize(w, i):
            part = fp8.quantize_fp8_tensor(w)
            if static:
                part["input_scale"] = input_scale.clone()
            return part

        tensors, parts = _per_shard(weights, quantize)
        deq = [fp8.dequantize_fp8_tensor(p["weight"], p["weight_scale"]) for p in parts]
        if static:
            act = lambda a: fp8.fake_quant_activations(a, "static", input_scale=input_scale)  # noqa: E731
        else:
            act = lambda a: fp8.fake_quant_activations(a, "token")  # noqa: E731
        return Case(tensors, fp8.fp8_tensor_config("static" if static else "dynamic"), deq, act)

    return build


def _gptq(bits: int, desc_act: bool):
    def build(weights, x):
        gptq = _testing("gptq")
        deq: list[torch.Tensor] = []
        # seed=i: a different activation order per shard, so the fused layer must keep both g_idx
        tensors, _ = _per_shard(
            weights, lambda w, i: _keep(gptq.quantize_gptq(w, bits, 128, sym=True, desc_act=desc_act, seed=i), deq)
        )
        return Case(tensors, gptq.gptq_config(bits, 128, desc_act=desc_act, sym=True), deq)

    return build


def _keep(result, sink: list):
    """``(tensors, dequantized)`` -> tensors, appending the dequantized weight to ``sink``."""
    tensors, deq = result
    sink.append(deq)
    return tensors


def _awq(weights, x):
    awq = _testing("awq")
    deq: list[torch.Tensor] = []
    tensors, _ = _per_shard(weights, lambda w, i: _keep(awq.quantize_awq(w, 128), deq))
    return Case(tensors, awq.awq_config(128), deq)


def _compressed_tensors(scheme: str):
    def build(weights, x):
        ct = _testing("compressed_tensors")
        fp8 = _testing("fp8") if scheme.startswith("FP8") else None
        modules = {f"{PARENT}.{s}": w for s, w in zip(SHARDS, weights)}
        ckpt = ct.make_ct_checkpoint(modules, scheme, dtype=torch.bfloat16)
        deq = [ckpt.dequantized[name] for name in modules]
        act = None
        if scheme == "FP8":
            # one activation feeds both shards: the fused layer uses the largest static scale
            scale = torch.stack([ckpt.state_dict[n].float().reshape(()) for n in _names("input_scale")]).amax()
            act = lambda a: fp8.fake_quant_activations(a, "static", input_scale=scale)  # noqa: E731
        elif scheme == "FP8_DYNAMIC":
            act = lambda a: fp8.fake_quant_activations(a, "token")  # noqa: E731
        elif scheme == "FP8_BLOCK":
            act = lambda a: fp8.fake_quant_activations(a, "group", group_size=128)  # noqa: E731
        return Case(dict(ckpt.state_dict), ckpt.config, deq, act)

    return build


#: (row name, producer) for every format qlinear loads
FORMATS: list[tuple[str, Callable]] = [
    ("unquantized-bf16", _unquantized),
    ("fp8-block", _fp8_block(None)),
    ("fp8-block-ue8m0", _fp8_block("ue8m0")),
    ("fp8-tensor", _fp8_tensor(static=False)),
    ("fp8-tensor-static", _fp8_tensor(static=True)),
    ("gptq-4bit", _gptq(4, desc_act=False)),
    ("gptq-4bit-actorder", _gptq(4, desc_act=True)),
    ("gptq-8bit", _gptq(8, desc_act=False)),
    ("awq-4bit", _awq),
    ("ct-W4A16", _compressed_tensors("W4A16")),
    ("ct-W4A16_ASYM", _compressed_tensors("W4A16_ASYM")),
    ("ct-W8A16", _compressed_tensors("W8A16")),
    ("ct-FP8", _compressed_tensors("FP8")),
    ("ct-FP8_DYNAMIC", _compressed_tensors("FP8_DYNAMIC")),
    ("ct-FP8_BLOCK", _compressed_tensors("FP8_BLOCK")),
]


def _relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    return float((a - e).norm() / e.norm().clamp(min=1e-300))


def _check_one(name, build, *, input_size, output_sizes, dtype, device, tokens, seed) -> Row:
    shapes = f"{input_size}->{list(output_sizes)}"
    row = Row(name, "-", shapes, str(dtype).replace("torch.", ""), str(device), None, THRESHOLDS[dtype], "-", "-", None, 0, False)
    try:
        gen = torch.Generator().manual_seed(seed)
        weights = [torch.randn(n, input_size, generator=gen) * 0.05 for n in output_sizes]
        x = torch.randn(tokens, input_size, generator=gen).to(dtype)
        noise = io.StringIO()
        with contextlib.redirect_stderr(noise):  # producers' own progress bars would break the table
            case = build(weights, x.float())
        row.quant_method = (case.config or {}).get("quant_method", "none")
        with tempfile.TemporaryDirectory(prefix="qlinear-selfcheck-") as tmp:
            # Split into two files mid-way, so that one module's tensors sit in both.
            total = sum(t.numel() * t.element_size() for t in case.tensors.values())
            files = save_checkpoint(case.tensors, tmp, max_shard_bytes=max(1, total // 2 + 1),
                                    config={"quantization_config": case.config} if case.config else {})
            row.files = len(files)
            qc = get_quantization_config(read_quantization_config(tmp))
            if qc is not None:
                qc.packed_modules_mapping.update(FUSED)
            with torch.device(device):
                layer = MergedReplicatedLinear(
                    input_size, list(output_sizes), params_dtype=dtype, quant_config=qc, prefix=f"{PARENT}.{FUSED_NAME}"
                )
            report = load_checkpoint(layer, tmp, fused_modules=FUSED, progress=False)
        row.load_s = report.seconds
        row.method = layer.quant_method.name
        xd = x.to(device)
        row.backend = layer.backend(xd)
        y = layer(xd)
        if y.shape != (tokens, sum(output_sizes)) or y.dtype != dtype:
            raise ValueError(f"output: expected shape {(tokens, sum(output_sizes))} dtype {dtype}, got {tuple(y.shape)} {y.dtype}")
        a = x.float() if case.activation is None else case.activation(x.float())
        ref = a @ torch.cat([w.float() for w in case.weights]).T
        row.rel_error = _relative_error(y.float(), ref)
        row.ok = bool(row.rel_error <= row.threshold)
        if not row.ok:
            row.error = f"relative error {row.rel_error:.3g} > {row.threshold:g}"
    except Exception as e:  # a failing format is a row, not a crash: the table shows them all
        row.error = f"{type(e).__name__}: {e}"
        row.ok = False
        row.traceback = traceback.format_exc()
    return row


def run_selfcheck(
    *,
    full: bool = False,
    device: str = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    only: Sequence[str] | None = None,
    tokens: int | None = None,
    seed: int = 0,
) -> list[Row]:
    """Run every format (or those named in ``only``) and return one ``Row`` each."""
    input_size, output_sizes = FULL if full else SMALL
    tokens = tokens or (32 if full else 16)
    chosen = FORMATS
    if only:
        unknown = sorted(set(only) - {n for n, _ in FORMATS})
        if unknown:
            raise ValueError(f"--only: unknown formats {unknown}; known: {[n for n, _ in FORMATS]}")
        chosen = [(n, b) for n, b in FORMATS if n in set(only)]
    return [
        _check_one(name, build, input_size=input_size, output_sizes=output_sizes, dtype=dtype, device=device,
                   tokens=tokens, seed=seed)
        for name, build in chosen
    ]


def format_table(rows: Sequence[Row]) -> str:
    head = ["format", "quant_method", "shapes", "dtype", "rel.error", "limit", "backend", "method", "load", "result"]
    body = [
        [
            r.format,
            r.quant_method,
            r.shapes,
            r.dtype,
            "-" if r.rel_error is None else f"{r.rel_error:.2e}",
            f"{r.threshold:.0e}",
            r.backend,
            r.method,
            "-" if r.load_s is None else f"{r.load_s * 1e3:.1f} ms",
            "ok" if r.ok else "FAIL",
        ]
        for r in rows
    ]
    widths = [max(len(str(c)) for c in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])] + [line(b) for b in body]
    failed = [r for r in rows if not r.ok]
    out.append("")
    out.append(f"{len(rows) - len(failed)}/{len(rows)} formats passed")
    for r in failed:
        out.append(f"FAIL {r.format}: {r.error}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qlinear selfcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="real DeepSeek sizes: 7168 -> [1536, 576]")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="default: cuda when available")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES), help="activation / params dtype (default bf16)")
    parser.add_argument("--only", default=None, help="comma-separated format names (default: all)")
    parser.add_argument("--tokens", type=int, default=None, help="rows of x (default 16, or 32 with --full)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failed rows")
    args = parser.parse_args(argv)

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device available")
    start = time.perf_counter()
    rows = run_selfcheck(
        full=args.full, device=device, dtype=DTYPES[args.dtype], only=args.only.split(",") if args.only else None,
        tokens=args.tokens, seed=args.seed,
    )
    print(format_table(rows))
    print(f"device={device} ({torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}), torch {torch.__version__}, "
          f"{time.perf_counter() - start:.1f} s")
    if args.verbose:
        for r in rows:
            if r.traceback:
                print(f"\n--- {r.format} ---\n{r.traceback}", file=sys.stderr)
    if args.json:
        doc = {"device": device, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    return 0 if rows and all(r.ok for r in rows) else 1
