"""The `deployplane` command line: the console script's and `python -m deployplane.cli`'s
`main`.

- `root`: the table of contents (every command's name, help line and module) and the
  process's entry; `lazy`: the group that imports a command's module only when used;
- `commands/`: the commands, one module per group or verb, each importing what it runs
  when it runs;
- `config/`: the connection's configuration (contexts, the config file, resolution);
- `docgen`: docs/cli.md's command reference, generated from the commands' `--help`.

Nothing is imported here, so `main` costs the root alone, and `deployplane --version`
not even that: it prints the version before typer is imported (the root's own
`--version` prints the same line).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """`deployplane ARGS...`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from deployplane import __version__

        print(f"deployplane {__version__}")
        return
    from deployplane.cli.root import run

    run(args)
