"""What ``load_checkpoint`` did: the report, and the error raised when a strict load is refused."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TensorLoad", "FileStats", "LoadReport", "CheckpointError"]


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 2**10 else f"{n} B"


@dataclass(frozen=True)
class TensorLoad:
    """Where one checkpoint tensor went: parameter (model path), shard (None: all / unsharded)."""

    param: str
    shard: int | None
    file: str
    nbytes: int


@dataclass
class FileStats:
    tensors: int = 0
    bytes: int = 0
    seconds: float = 0.0


@dataclass
class LoadReport:
    """Outcome of one ``load_checkpoint`` call.

    ``loaded``: checkpoint tensor name -> ``TensorLoad``. ``skipped``: tensors that were in the
    checkpoint and aimed at a parameter but not loaded (strict=False), with the reason.
    ``unexpected``: tensors no parameter takes. ``missing``: parameters (``name`` or
    ``name[shard i]``) that no tensor filled. ``problems``: every problem found, one line each
    (with strict=True a non-empty list is raised instead). ``unfinished``: modules whose
    ``process_weights_after_loading`` raised (strict=False), with the message. ``finished``:
    modules finished by this call. ``bytes`` / ``seconds``: data read and wall time; ``files``:
    the same per file.
    """

    path: str
    loaded: dict[str, TensorLoad] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    unfinished: dict[str, str] = field(default_factory=dict)
    files: dict[str, FileStats] = field(default_factory=dict)
    bytes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when nothing was skipped, missing, unexpected or left unfinished."""
        return not (self.problems or self.unfinished)

    def __str__(self) -> str:
        head = (
            f"loaded {len(self.loaded)} tensors ({_mib(self.bytes)}) from {len(self.files)} file"
            f"{'s' if len(self.files) != 1 else ''} in {self.seconds:.2f} s; finished {len(self.finished)} layers"
        )
        counts = [
            f"{n} {what}"
            for n, what in (
                (len(self.missing), "missing"),
                (len(self.unexpected), "unexpected"),
                (len(self.skipped), "skipped"),
                (len(self.unfinished), "unfinished"),
            )
            if n
        ]
        if not counts:
            return head
        lines = [head + "; " + ", ".join(counts)]
        shown = self.problems + [f"{m}: {msg}" for m, msg in self.unfinished.items()]
        lines += [f"  - {p}" for p in shown[:10]]
        if len(shown) > 10:
            lines.append(f"  ... and {len(shown) - 10} more")
        return "\n".join(lines)


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; ``problems`` lists every reason, one line each.

    Raised before any parameter changes (validation), or after every change was undone (a
    failure while reading or finishing, see ``load_checkpoint``).
    """

    def __init__(self, path: str, problems: list[str], *, what: str = "refused, no parameter was changed"):
        self.path = path
        self.problems = list(problems)
        n = len(self.problems)
        body = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"load_checkpoint({path}): {n} problem{'s' if n != 1 else ''}, {what}:\n{body}")
