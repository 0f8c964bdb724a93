"""``python -m qlinear <command>``; commands: ``selfcheck`` (see ``qlinear.selfcheck``)."""

from __future__ import annotations

import sys

from qlinear.selfcheck import main as selfcheck_main

COMMANDS = {"selfcheck": selfcheck_main}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    usage = f"usage: python -m qlinear {{{','.join(COMMANDS)}}} [options]  (python -m qlinear selfcheck --help)"
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(usage if not argv else f"unknown command {argv[0]!r}\n{usage}", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
