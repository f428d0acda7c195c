"""The `deployplane` command line: the console script's and `python -m deployplane.cli`'s
`main`.

- `root`: the table of contents (each top-level command's name and the module declaring
  it) and the process's entry; `lazy`: the group that imports a declaration when used;
- `params`, `helptext`: what a declaration is made of (click's parameters, an argument
  with help, an enum's values) and how help prints;
- `commands/`: the commands of the API and of the cluster, one module per group or verb;
  `programs/`: the command lines of the programs this package runs (the operator, a
  listener's agent, the emulator, the dev cluster, the demo); each command imports
  what it runs when it runs;
- `clientconfig/`: where a command's connection comes from (contexts, the config file,
  flags and variables);
- `tab/`: TAB completion as kubectl's: the scripts of `deployplane completion SHELL`
  call the hidden `deployplane __complete WORDS...`, answered from the declarations;
- `docgen`: docs/cli.md's command reference, generated from the commands' `--help`.

Nothing is imported here, so `deployplane --version` costs the interpreter alone: the
version is printed before click is imported (the root's own `--version` prints the same
line).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: --version is answered with nothing imported
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """`deployplane ARGS...`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from deployplane import __version__

        print(f"deployplane {__version__}")
        return
    # httpx imports its own command line (`httpx._main`: rich's console, pygments'
    # lexers) whenever click and rich are installed, as they are here, though no
    # command runs it: most of what `import httpx` costs every command that calls the
    # API (bench/cli.py). Marked absent in this process only (never in the library,
    # where it would reach whoever imports the client), httpx is as installed without
    # its `cli` extra.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: not importable
    from deployplane.cli.root import run

    run(args)
