"""``load_checkpoint``: stream a safetensors checkpoint into a model, all or nothing.

Three passes:

1. **Plan** (no tensor data read): resolve the files, parse and check every header, map every
   tensor name to a parameter and shard, check its shape and dtype against the parameter, and
   check that every shard of every required parameter is provided exactly once. With
   ``strict=True`` any problem raises one ``CheckpointError`` listing all of them, before any
   parameter is touched.
2. **Load**: open each file once and read its tensors one at a time in file order (only one
   tensor's data is in memory at a time), handing each to its parameter's ``weight_loader``.
3. **Finish**: ``process_weights_after_loading()`` on every module that has it.

Staging ("nothing half-loaded"). Pass 1 catches everything that can be known from the headers,
including truncated files and bad offsets, so a deterministic problem never starts pass 2.
What remains can only surface while reading or finishing: an I/O error, a file changed while
loading, a data-dependent check in a format's ``process_weights_after_loading`` (an invalid
``g_idx``, say). For those, ``atomic=True`` (the default) keeps an undo journal: each parameter
(and buffer of a finished module) is copied once, just before its first change, and on failure
every copy is written back, every module's attribute dict restored and the error raised. The
journal costs one copy of the parameters being loaded, on their own device; the alternative,
reading and checking all data before writing any, would have to hold the whole checkpoint in
memory or read it twice. ``atomic=False`` skips the journal for models that do not fit twice:
validation still runs first, and a failure in pass 2/3 then names the layers that may be
partially loaded.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

import torch
from torch import nn

from qlinear.loading.mapping import ParamIndex, Target, build_index, check_tensor
from qlinear.loading.report import CheckpointError, FileStats, LoadReport, TensorLoad
from qlinear.loading.safetensors_io import TensorEntry, read_header, resolve_checkpoint

__all__ = ["load_checkpoint", "PROGRESS_MIN_BYTES"]

#: checkpoints at least this large get a progress bar when stderr is a terminal
PROGRESS_MIN_BYTES = 256 * 2**20


class _Journal:
    """Undo log: the original storage and a copy of every tensor changed since it was opened."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._saved: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, set[int] | None]] = {}

    def save(self, t: torch.Tensor) -> None:
        if not self.enabled or id(t) in self._saved:
            return
        shards = set(t.loaded_shards) if hasattr(t, "loaded_shards") else None
        self._saved[id(t)] = (t, t.data, t.detach().clone(), shards)

    def restore(self) -> None:
        with torch.no_grad():
            for t, data, backup, shards in reversed(list(self._saved.values())):
                t.data = data  # the original storage, in case a finisher swapped it out
                data.copy_(backup)
                if shards is not None:
                    t.loaded_shards.clear()
                    t.loaded_shards.update(shards)
        self._saved.clear()


def _module_state(module: nn.Module) -> dict:
    """Shallow copy of a module's attributes: parameter / buffer / submodule dicts copied, so
    that a finisher that registers or swaps tensors can be undone."""
    return {k: copy.copy(v) if isinstance(v, (dict, list, set)) else v for k, v in module.__dict__.items()}


def _restore_state(module: nn.Module, state: dict) -> None:
    module.__dict__.clear()
    module.__dict__.update(state)


@functools.lru_cache(maxsize=4096)  # called per tensor; a checkpoint has few files
def _short(file: Path, root: Path) -> str:
    try:
        return str(file.relative_to(root))
    except ValueError:
        return str(file)


def _plan(ckpt, headers, index: ParamIndex, report: LoadReport) -> tuple[list[tuple[TensorEntry, Target]], list[str]]:
    """Pass 1: every (tensor, target) to load, and every problem found (see module docstring)."""
    problems: list[str] = list(ckpt.problems)
    root = ckpt.root
    damaged: dict[Path, str] = {}
    for h in headers:
        problems += h.problems
        if h.problems:
            damaged[h.path] = h.problems[0]

    # Where each tensor lives; a name in two files is a corrupt (or mixed-up) sharded checkpoint.
    found: dict[str, list[TensorEntry]] = {}
    for h in headers:
        for entry in h.tensors.values():
            found.setdefault(entry.name, []).append(entry)
    chosen: dict[str, TensorEntry] = {}
    for name, entries in found.items():
        pick = entries[0]
        if len(entries) > 1:
            files = [_short(e.file, root) for e in entries]
            problems.append(f"tensor {name!r} appears in {len(entries)} files: {files}")
            # strict=False reads the copy the index names (else the first): one problem, not two
            listed = (ckpt.weight_map or {}).get(name)
            chosen[name] = next((e for e in entries if e.file == listed), pick)
            continue
        if ckpt.weight_map is not None:
            listed = ckpt.weight_map.get(name)
            if listed is None:
                problems.append(f"{_short(pick.file, root)}: tensor {name!r} is not listed in {ckpt.index.name}")
            elif listed != pick.file:
                problems.append(
                    f"{ckpt.index.name}: tensor {name!r} is listed in {_short(listed, root)}, but it is in {_short(pick.file, root)}"
                )
        chosen[name] = pick
    if ckpt.weight_map is not None:
        parsed = {h.path for h in headers if not h.problems}
        for name, file in ckpt.weight_map.items():
            if name not in found and file in parsed:
                problems.append(f"{ckpt.index.name}: tensor {name!r} is listed in {_short(file, root)}, which does not hold it")

    plan: list[tuple[TensorEntry, Target]] = []
    covered: dict[int, dict[int | None, str]] = {}  # id(param) -> shard -> tensor name
    for name, entry in chosen.items():
        where = f"{_short(entry.file, root)}: tensor {name!r}"
        target = index.lookup(name)
        if isinstance(target, str):
            report.unexpected.append(name)
            problems.append(f"{where}: unexpected: {target}")
            continue
        mine = covered.setdefault(id(target.info.param), {})
        # the same shard twice, or a fused-on-disk tensor next to a per-shard one
        clash = mine.get(target.shard) or next(
            (n for s, n in mine.items() if (s is None) != (target.shard is None)), None
        )
        if clash is not None:
            problems.append(f"{where}: {target.info.label(target.shard)} is also loaded from tensor {clash!r}")
            report.skipped[name] = f"{target.info.label(target.shard)} already comes from {clash!r}"
            continue
        mine[target.shard] = name
        bad = check_tensor(target, entry.shape, entry.dtype)
        if bad is not None:
            problems.append(f"{where}: {bad}")
            report.skipped[name] = bad
            continue
        if entry.file in damaged:
            report.skipped[name] = f"file is damaged: {damaged[entry.file]}"
            continue
        plan.append((entry, target))

    for info in index.params:
        mine = set(covered.get(id(info.param), ()))
        n = info.num_shards
        if n is None or n == 1:
            if not mine and info.required and not info.already_loaded():
                names = " or ".join(repr(c) for c in info.ckpt_names)
                report.missing.append(info.display)
                problems.append(f"{info.display}: missing: no tensor {names} in the checkpoint")
            continue
        if None in mine:
            continue
        needed = [i for i in range(n) if i not in mine and i not in info.already_loaded()]
        if not needed or (not mine and not info.required and not info.already_loaded()):
            continue
        for i in needed:
            report.missing.append(info.label(i))
            problems.append(
                f"{info.label(i)}: missing: no tensor {info.shard_tensor_name(i)!r} (shard {i}) and no fused "
                f"{info.display!r} in the checkpoint"
            )
    plan.sort(key=lambda et: (str(et[0].file), et[0].begin))
    return plan, problems


def _progress_bar(total_bytes: int, count: int, progress: bool | None):
    if progress is None:
        progress = total_bytes >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
    if not progress:
        return None
    from tqdm import tqdm  # only when a bar is shown: keeps tqdm off `import qlinear`

    return tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024, desc=f"loading {count} tensors", file=sys.stderr)


def _load_one(target: Target, tensor: torch.Tensor) -> None:
    param = target.info.param
    loader = getattr(param, "weight_loader", None)
    if callable(loader):
        if target.shard is None:
            loader(param, tensor)
        else:
            loader(param, tensor, target.shard)
        return
    with torch.no_grad():  # a plain nn.Parameter: shape and dtype checked in pass 1
        # cast where the source lives: not every device copy converts every dtype
        param.data.copy_(tensor.to(dtype=param.dtype))


def load_checkpoint(
    model: nn.Module,
    path: str | os.PathLike,
    *,
    fused_modules: Mapping[str, Sequence[str]] | None = None,
    strict: bool = True,
    progress: bool | None = None,
    atomic: bool = True,
) -> LoadReport:
    """Load a safetensors checkpoint into ``model`` and finish its layers.

    Args:
        model: any ``nn.Module``; its parameters are found with ``named_parameters`` paths and,
            for ``LinearBase`` layers, under the layer's ``prefix`` too.
        path: a ``.safetensors`` file, a ``*.safetensors.index.json``, or a directory holding
            one ``.safetensors`` file or several with ``model.safetensors.index.json``. Anything
            else (``.bin``, ``.pt``, pickles) is refused: qlinear never unpickles.
        fused_modules: fused layer name -> checkpoint module names of its shards, e.g.
            ``{"fused_qkv_a_proj": ["q_a_proj", "kv_a_proj_with_mqa"]}``; a key matches a
            layer's whole path or its trailing components. Layers' own ``shard_names`` are used
            too. ``<parent>.q_a_proj.<p>`` loads as shard 0 of ``<parent>.fused_qkv_a_proj.<p>``.
        strict: raise ``CheckpointError`` (a ``ValueError``) listing every missing, unexpected,
            misshaped, mistyped, duplicated or damaged tensor before any parameter changes.
            With False those are listed in the report and the rest is loaded; a layer that
            cannot be finished is listed in ``report.unfinished``.
        progress: show a tqdm bar (bytes and tensors); default: only for checkpoints of
            ``PROGRESS_MIN_BYTES`` or more when stderr is a terminal.
        atomic: keep an undo journal so that a failure while reading or finishing leaves every
            parameter as it was (costs one copy of the loaded parameters; see module docstring).

    Returns:
        ``LoadReport``.
    """
    start = time.perf_counter()
    ckpt = resolve_checkpoint(path)
    index = build_index(model, fused_modules)
    report = LoadReport(str(path))
    from safetensors import safe_open  # heavy import kept off `import qlinear`

    headers = [read_header(f) for f in ckpt.files]
    for h in headers:
        if not h.problems:
            # A second opinion from the reader pass 2 uses (it checks the header too), so that
            # anything our parser lets through is still found before the first write.
            try:
                with safe_open(str(h.path), framework="pt", device="cpu"):
                    pass
            except Exception as e:
                h.problems.append(f"{h.path}: safetensors cannot open it: {type(e).__name__}: {e}")
    plan, problems = _plan(ckpt, headers, index, report)
    report.problems = problems
    if problems and strict:
        raise CheckpointError(str(path), problems)

    journal = _Journal(atomic)
    touched: set[str] = set()
    total = sum(entry.nbytes for entry, _ in plan)
    bar = _progress_bar(total, len(plan), progress)
    by_file: dict[Path, list[tuple[TensorEntry, Target]]] = {}
    for entry, target in plan:
        by_file.setdefault(entry.file, []).append((entry, target))
    try:
        done = 0
        for file, items in by_file.items():
            stats = report.files.setdefault(_short(file, ckpt.root), FileStats())
            t_file = time.perf_counter()
            current = "<header>"
            try:
                with safe_open(str(file), framework="pt", device="cpu") as f:
                    for entry, target in items:
                        current = entry.name
                        tensor = f.get_tensor(entry.name)
                        if tuple(tensor.shape) != entry.shape or tensor.dtype != entry.dtype:
                            raise ValueError(f"read {tuple(tensor.shape)} {tensor.dtype}, header said {entry.shape} {entry.dtype} (file changed?)")
                        journal.save(target.info.param)
                        touched.add(target.info.module_name or '<root>')
                        _load_one(target, tensor)
                        del tensor
                        report.loaded[entry.name] = TensorLoad(target.info.name, target.shard, _short(file, ckpt.root), entry.nbytes)
                        stats.tensors += 1
                        stats.bytes += entry.nbytes
                        report.bytes += entry.nbytes
                        done += 1
                        if bar is not None:
                            bar.update(entry.nbytes)
                            bar.set_postfix_str(f"{done}/{len(plan)} tensors", refresh=False)
            except Exception as e:
                raise _Failure(f"{_short(file, ckpt.root)}: tensor {current!r}: {type(e).__name__}: {e}") from e
            finally:
                stats.seconds += time.perf_counter() - t_file
        _finish(model, journal, report, strict, atomic)
    except _Failure as failure:
        journal.restore()
        what = (
            "every change was undone"
            if atomic
            else f"atomic=False, so these layers may be partially loaded: {sorted(set(touched)) or 'none'}"
        )
        raise CheckpointError(str(path), [str(failure)], what=what) from failure.__cause__
    except BaseException:  # KeyboardInterrupt and the like: undo, then let it through
        journal.restore()
        raise
    finally:
        if bar is not None:
            bar.close()
    report.seconds = time.perf_counter() - start
    return report


class _Failure(Exception):
    """Internal: a failure in pass 2 or 3, already described with file / tensor / layer."""


def _finish(model: nn.Module, journal: _Journal, report: LoadReport, strict: bool, atomic: bool) -> None:
    """Pass 3: ``process_weights_after_loading`` on every module that has it and is not finished."""
    states: list[tuple[nn.Module, dict]] = []
    for name, module in model.named_modules():
        finisher = getattr(module, "process_weights_after_loading", None)
        if not callable(finisher) or getattr(module, "weights_finished", False):
            continue
        label = name or getattr(module, "prefix", "") or type(module).__name__
        local = _Journal(atomic and not strict)  # strict: the global journal undoes everything
        for t in list(module.parameters(recurse=False)) + list(module.buffers(recurse=False)):
            journal.save(t)
            local.save(t)
        state = _module_state(module)
        states.append((module, state))
        try:
            finisher()
        except Exception as e:
            if strict:
                for m, s in reversed(states):
                    _restore_state(m, s)
                raise _Failure(f"{label}: process_weights_after_loading failed: {type(e).__name__}: {e}") from e
            _restore_state(module, state)
            local.restore()
            report.unfinished[label] = f"{type(e).__name__}: {e}"
            continue
        report.finished.append(label)
