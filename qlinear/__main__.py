"""``python -m qlinear <command>``; commands: ``selfcheck`` (see ``qlinear.selfcheck``)."""

from __future__ import annotations

import sys

from qlinear import selfcheck

COMMANDS = {"selfcheck": selfcheck.main}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(f"usage: python -m qlinear {{{','.join(COMMANDS)}}} [options]  (python -m qlinear selfcheck --help)",
              file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
