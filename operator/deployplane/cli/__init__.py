"""The `deployplane` command line: the console script's and `python -m deployplane.cli`'s
`main`.

- `root`: the table of contents (every command's name, help line and module) and the
  process's entry; `lazy`: the group that imports a command's module only when used;
- `commands/`: the commands, one module per group or verb, each importing what it runs
  when it runs;
- `config/`: the connection's configuration (contexts, the config file, resolution);
- `tab`: a TAB answered from the command tree, without typer (`treegen` generates the
  tree from the commands);
- `docgen`: docs/cli.md's command reference, generated from the commands' `--help`.

Nothing heavy is imported here, so `main` costs the root alone, and `deployplane
--version` and a TAB not even that: the version is printed before typer is imported
(the root's own `--version` prints the same line), and `tab` answers a TAB from the
tree (what it leaves to click, the root answers).
"""

from __future__ import annotations

import os
import sys

from deployplane.cli.tab import COMPLETE_VAR, answer

TYPE_CHECKING = False  # not typing's: its import would cost a TAB a tenth of its answer
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """`deployplane ARGS...`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get(COMPLETE_VAR):
        answered = answer(os.environ)
        if answered is not None:
            text, code = answered
            sys.stdout.write(text)
            sys.stdout.flush()
            raise SystemExit(code)
    if args == ["--version"]:
        from deployplane import __version__

        print(f"deployplane {__version__}")
        return
    from deployplane.cli.root import run

    run(args)
