"""Finding, checking and writing safetensors checkpoints, without reading tensor data.

A safetensors file is ``[u64 little-endian header length n][n bytes of JSON header][data]``.
The header maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` with
offsets relative to the start of the data section; an optional ``"__metadata__"`` holds strings.
``read_header`` parses that JSON itself (never the data) so that every problem can be reported
with the file *and* the tensor it concerns; the ``safetensors`` package checks the same file
again when it is opened for reading.

Nothing here unpickles anything: files that are not safetensors (``.bin``, ``.pt``, ``.pth``,
``.ckpt``, pickles, ``torch.save`` zip archives) are refused by name.

``safetensors`` itself is imported inside the functions that read or write tensor data, so that
``import qlinear`` does not load it.
"""

from __future__ import annotations

import difflib
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import torch

__all__ = [
    "INDEX_NAME",
    "SINGLE_NAME",
    "CONFIG_NAME",
    "REFUSED_SUFFIXES",
    "SAFETENSORS_DTYPES",
    "TensorEntry",
    "FileHeader",
    "CheckpointFiles",
    "read_header",
    "resolve_checkpoint",
    "read_quantization_config",
    "save_checkpoint",
]

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
CONFIG_NAME = "config.json"

# Formats that carry (or may carry) pickled Python objects, or that qlinear does not read.
REFUSED_SUFFIXES = {
    ".bin": "a PyTorch pickle (torch.save)",
    ".pt": "a PyTorch pickle (torch.save)",
    ".pth": "a PyTorch pickle (torch.save)",
    ".ckpt": "a pickled checkpoint",
    ".pkl": "a Python pickle",
    ".pickle": "a Python pickle",
    ".npz": "a NumPy archive (may hold pickled objects)",
    ".npy": "a NumPy array file (may hold pickled objects)",
    ".gguf": "a GGUF file",
    ".h5": "an HDF5 file",
    ".msgpack": "a Flax msgpack file",
}
_REFUSAL = "qlinear loads safetensors only and never unpickles; convert it to .safetensors first"

# safetensors dtype tag -> torch dtype (tags missing from this torch build are left out).
SAFETENSORS_DTYPES: dict[str, torch.dtype] = {
    tag: getattr(torch, name)
    for tag, name in {
        "BOOL": "bool",
        "U8": "uint8",
        "I8": "int8",
        "I16": "int16",
        "U16": "uint16",
        "I32": "int32",
        "U32": "uint32",
        "I64": "int64",
        "U64": "uint64",
        "F16": "float16",
        "BF16": "bfloat16",
        "F32": "float32",
        "F64": "float64",
        "F8_E4M3": "float8_e4m3fn",
        "F8_E4M3FNUZ": "float8_e4m3fnuz",
        "F8_E5M2": "float8_e5m2",
        "F8_E5M2FNUZ": "float8_e5m2fnuz",
        "F8_E8M0": "float8_e8m0fnu",
        "C64": "complex64",
    }.items()
    if hasattr(torch, name)
}

# safetensors refuses headers above 100 MB; so do we, before allocating anything.
_MAX_HEADER_BYTES = 100_000_000


@dataclass(frozen=True)
class TensorEntry:
    """One tensor as its file's header describes it (no data read)."""

    name: str
    file: Path
    dtype: torch.dtype
    shape: tuple[int, ...]
    begin: int  # byte offsets into the data section
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass
class FileHeader:
    """A parsed header: the tensors it holds and the problems found in it."""

    path: Path
    size: int = 0
    tensors: dict[str, TensorEntry] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass
class CheckpointFiles:
    """The files of one checkpoint and, when sharded, its index."""

    root: Path  # directory holding config.json (the checkpoint dir, or the file's parent)
    files: list[Path]
    index: Path | None = None
    weight_map: dict[str, Path] | None = None  # tensor name -> file, from the index
    problems: list[str] = field(default_factory=list)


def _refusal(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in REFUSED_SUFFIXES:
        return f"{path}: refused: {REFUSED_SUFFIXES[suffix]}; {_REFUSAL}"
    return None


def _sniff_foreign(head: bytes) -> str | None:
    """Name the format of a file that is not safetensors but has its suffix, from its first bytes.

    ``head`` is the first 9 bytes. A safetensors header is a JSON object, so byte 8 is ``{``;
    only a file without it is judged by its magic bytes (a real header length such as 640 has
    the low bytes ``80 02``, which would otherwise look like a pickle's protocol marker).
    """
    if head[8:9] == b"{":
        return None
    if head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05"):
        return "a Python pickle"
    if head[:4] == b"PK\x03\x04":
        return "a zip archive (torch.save format, holds a pickle)"
    if head[:4] == b"GGUF":
        return "a GGUF file"
    return None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} appears twice")
        seen[key] = value
    return seen


def read_header(path: str | os.PathLike) -> FileHeader:
    """Parse and check the header of one safetensors file without reading its data.

    Checked: the file is long enough for its header; the header is a JSON object without
    repeated keys; every tensor has a known dtype, a shape of non-negative ints and
    ``data_offsets`` ``[begin, end]`` with ``end - begin == numel * itemsize``; tensors neither
    overlap nor leave holes, and the last one ends exactly at the end of the file (a shorter
    file is truncated). Every problem names the file and, where there is one, the tensor.
    """
    path = Path(path)
    header = FileHeader(path)
    try:
        header.size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(9)
            if len(head) < 8:
                header.problems.append(f"{path}: file is {len(head)} bytes long, too short for a safetensors header")
                return header
            (n,) = struct.unpack("<Q", head[:8])
            foreign = _sniff_foreign(head)
            f.seek(8)
            if foreign is not None:
                header.problems.append(f"{path}: refused: this is {foreign}, not safetensors; {_REFUSAL}")
                return header
            if n > _MAX_HEADER_BYTES or 8 + n > header.size:
                header.problems.append(
                    f"{path}: header length {n} bytes runs past the end of the {header.size}-byte file "
                    f"(truncated, or not a safetensors file)"
                )
                return header
            raw = f.read(n)
    except OSError as e:
        header.problems.append(f"{path}: cannot read: {e}")
        return header
    try:
        doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (UnicodeDecodeError, ValueError) as e:
        header.problems.append(f"{path}: header is not valid JSON: {e}")
        return header
    if not isinstance(doc, dict):
        header.problems.append(f"{path}: header must be a JSON object, got {type(doc).__name__}")
        return header

    meta = doc.pop("__metadata__", None)
    if meta is not None:
        if isinstance(meta, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
            header.metadata = meta
        else:
            header.problems.append(f"{path}: __metadata__ must map strings to strings")

    data_size = header.size - 8 - n
    for name, spec in doc.items():
        entry = _parse_entry(path, name, spec, header.problems)
        if entry is not None:
            header.tensors[name] = entry
    _check_layout(path, list(header.tensors.values()), data_size, header.problems)
    return header


def _parse_entry(path: Path, name: str, spec: Any, problems: list[str]) -> TensorEntry | None:
    where = f"{path}: tensor {name!r}"
    if not isinstance(spec, dict):
        problems.append(f"{where}: header entry must be an object, got {type(spec).__name__}")
        return None
    absent = [k for k in ("dtype", "shape", "data_offsets") if k not in spec]
    if absent:
        problems.append(f"{where}: header entry lacks {absent}")
        return None
    tag, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
    if tag not in SAFETENSORS_DTYPES:
        problems.append(f"{where}: unknown or unsupported dtype {tag!r}; known: {sorted(SAFETENSORS_DTYPES)}")
        return None
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        problems.append(f"{where}: shape must be a list of non-negative ints, got {shape!r}")
        return None
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int and o >= 0 for o in offsets)
        or offsets[1] < offsets[0]
    ):
        problems.append(f"{where}: data_offsets must be [begin, end] with 0 <= begin <= end, got {offsets!r}")
        return None
    dtype = SAFETENSORS_DTYPES[tag]
    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * dtype.itemsize
    if offsets[1] - offsets[0] != nbytes:
        problems.append(
            f"{where}: data_offsets {offsets} span {offsets[1] - offsets[0]} bytes, but dtype {tag} "
            f"shape {shape} needs {nbytes}"
        )
        return None
    return TensorEntry(name, path, dtype, tuple(shape), offsets[0], offsets[1])


def _check_layout(path: Path, entries: list[TensorEntry], data_size: int, problems: list[str]) -> None:
    """Tensors must tile the data section exactly: no overlap, no hole, nothing past the end."""
    position, previous = 0, None  # end of the data covered so far, and the tensor that ends there
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.end > data_size:
            problems.append(
                f"{path}: tensor {e.name!r}: data_offsets [{e.begin}, {e.end}] run past the end of the "
                f"{data_size}-byte data section (file truncated?)"
            )
        if previous is not None and e.begin < position:
            problems.append(
                f"{path}: tensor {e.name!r}: bytes [{e.begin}, {e.end}) overlap tensor {previous.name!r} "
                f"[{previous.begin}, {previous.end})"
            )
        elif e.begin > position:
            problems.append(f"{path}: bytes [{position}, {e.begin}) of the data section belong to no tensor (before {e.name!r})")
        if e.end > position or previous is None:
            position, previous = max(position, e.end), e
    if position < data_size and not any("past the end" in p for p in problems):
        problems.append(f"{path}: {data_size - position} bytes after the last tensor belong to no tensor")


def resolve_checkpoint(path: str | os.PathLike) -> CheckpointFiles:
    """The safetensors files ``path`` stands for.

    ``path`` is a ``.safetensors`` file, a ``*.safetensors.index.json`` file, or a directory with
    either an index (``model.safetensors.index.json``) or exactly one ``.safetensors`` file.
    Raises ``FileNotFoundError`` for a path that does not exist and ``ValueError`` for anything
    that is not safetensors or cannot be resolved to one set of files. Problems that concern
    single tensors or files of a sharded checkpoint (an index naming a missing file) are
    returned in ``.problems`` so that the caller can report them together with the rest.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"checkpoint {p} does not exist")
    if p.is_file():
        refused = _refusal(p)
        if refused:
            raise ValueError(refused)
        if p.name.endswith(".index.json"):
            return _from_index(p.parent, p)
        if p.suffix != ".safetensors":
            raise ValueError(f"{p}: not a .safetensors file; {_REFUSAL}")
        return CheckpointFiles(p.parent, [p])
    if not p.is_dir():
        raise ValueError(f"checkpoint {p} is neither a file nor a directory")

    index = p / INDEX_NAME
    if not index.is_file():
        indexes = sorted(q for q in p.glob("*.safetensors.index.json") if q.is_file())
        if len(indexes) > 1:
            raise ValueError(f"{p}: several safetensors indexes {[q.name for q in indexes]}; pass one of them as the path")
        index = indexes[0] if indexes else None
    if index is not None:
        return _from_index(p, index)
    files = sorted(q for q in p.glob("*.safetensors") if q.is_file())
    if len(files) == 1:
        return CheckpointFiles(p, files)
    if len(files) > 1:
        raise ValueError(
            f"{p}: {len(files)} .safetensors files ({[q.name for q in files]}) and no {INDEX_NAME} saying "
            f"which tensor is where; pass one file or add the index"
        )
    foreign = sorted(q.name for q in p.iterdir() if q.is_file() and _refusal(q))
    if foreign:
        raise ValueError(f"{p}: refused: holds only {foreign}, not safetensors; {_REFUSAL}")
    raise ValueError(f"{p}: no .safetensors file in this directory")


def _from_index(root: Path, index: Path) -> CheckpointFiles:
    try:
        doc = json.loads(index.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{index}: cannot parse the index: {e}") from e
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ValueError(f"{index}: 'weight_map' must be an object mapping tensor names to file names")
    out = CheckpointFiles(root, [], index=index, weight_map={})
    by_file: dict[str, list[str]] = {}
    for name, fname in weight_map.items():
        by_file.setdefault(fname, []).append(name)
    for fname, names in by_file.items():
        file = root / fname
        shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        # The index is data: it must not send us outside the checkpoint directory.
        if Path(fname).is_absolute() or ".." in Path(fname).parts:
            out.problems.append(f"{index}: file {fname!r} (for tensors {shown}) lies outside {root}")
            continue
        refused = _refusal(file)
        if refused:
            out.problems.append(f"{index}: names {fname!r} (for tensors {shown}): {refused}")
            continue
        if not file.is_file():
            out.problems.append(f"{index}: names file {fname!r} for tensors {shown}, but {file} does not exist")
            continue
        out.files.append(file)
        for name in names:
            out.weight_map[name] = file
    return out


def read_quantization_config(path: str | os.PathLike) -> dict[str, Any] | None:
    """``quantization_config`` from the ``config.json`` of a checkpoint, or None.

    ``path`` is the checkpoint directory, a file in it (``config.json`` is looked for beside
    it), or ``config.json`` itself. Returns None when there is no ``config.json`` or it has no
    quantization settings (an unquantized checkpoint). Older compressed-tensors checkpoints
    keep the settings under ``compression_config``; that key is accepted too.

    Raises ``ValueError`` naming the file for malformed JSON, a top level that is not an
    object, a ``quantization_config`` that is not an object, or a key that looks like a
    misspelling of ``quantization_config`` (which would otherwise load as unquantized).
    """
    p = Path(path)
    config = p if p.is_file() and p.name == CONFIG_NAME else (p if p.is_dir() else p.parent) / CONFIG_NAME
    if not config.is_file():
        return None
    try:
        doc = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{config}: malformed JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{config}: top level must be a JSON object, got {type(doc).__name__}")
    for key in ("quantization_config", "compression_config"):
        if key in doc:
            value = doc[key]
            if value is None:
                return None
            if not isinstance(value, dict):
                raise ValueError(f"{config}: {key!r} must be an object, got {type(value).__name__}: {value!r}")
            return value
    close = difflib.get_close_matches("quantization_config", [k for k in doc if isinstance(k, str)], n=1, cutoff=0.8)
    if close:
        raise ValueError(f"{config}: has {close[0]!r} but no 'quantization_config': misspelled? (refusing to load as unquantized)")
    return None


def _shard_groups(sizes: Mapping[str, int], max_shard_bytes: int | None) -> list[list[str]]:
    """Greedy, in order: a new file starts when the next tensor would pass ``max_shard_bytes``."""
    groups: list[list[str]] = [[]]
    used = 0
    for name, size in sizes.items():
        if max_shard_bytes is not None and groups[-1] and used + size > max_shard_bytes:
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += size
    return groups


def save_checkpoint(
    tensors: Mapping[str, torch.Tensor],
    path: str | os.PathLike,
    *,
    max_shard_bytes: int | None = None,
    config: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write ``tensors`` as a safetensors checkpoint; return the files written.

    ``path`` ending in ``.safetensors``: one file (``max_shard_bytes`` must then be None).
    Otherwise ``path`` is a directory (created): ``model.safetensors`` when everything fits in
    ``max_shard_bytes`` (or it is None), else ``model-0000i-of-0000n.safetensors`` files filled
    in the order of ``tensors`` (so one module's tensors may straddle two files) plus
    ``model.safetensors.index.json``. ``config`` is written as ``config.json`` beside the
    tensors; a dict holding ``quant_method`` (a bare quantization config) is wrapped as
    ``{"quantization_config": config}``.

    Tensors are copied to CPU (contiguous) before writing; the inputs are not changed.
    """
    from safetensors.torch import save_file  # heavy import kept off `import qlinear`

    p = Path(path)
    # clone(): safetensors refuses tensors that share storage (views of one fused tensor).
    cpu = {name: t.detach().to("cpu").contiguous().clone() for name, t in tensors.items()}
    if p.suffix == ".safetensors":
        if max_shard_bytes is not None:
            raise ValueError(f"save_checkpoint: max_shard_bytes needs a directory path, got file {p}")
        p.parent.mkdir(parents=True, exist_ok=True)
        save_file(cpu, str(p))
        written, root = [p], p.parent
    else:
        p.mkdir(parents=True, exist_ok=True)
        groups = _shard_groups({n: t.numel() * t.element_size() for n, t in cpu.items()}, max_shard_bytes)
        if len(groups) == 1:
            written = [p / SINGLE_NAME]
            save_file(cpu, str(written[0]))
        else:
            written, weight_map = [], {}
            for i, names in enumerate(groups):
                file = p / f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
                save_file({n: cpu[n] for n in names}, str(file))
                written.append(file)
                weight_map.update({n: file.name for n in names})
            total = sum(t.numel() * t.element_size() for t in cpu.values())
            index = {"metadata": {"total_size": total}, "weight_map": weight_map}
            (p / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
        root = p
    if config is not None:
        doc = dict(config)
        if "quant_method" in doc and "quantization_config" not in doc:
            doc = {"quantization_config": doc}
        (root / CONFIG_NAME).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return written
