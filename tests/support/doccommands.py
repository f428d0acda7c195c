"""The shell commands the docs give a user, taken from the Markdown as it is (whatever its
headings or order): every `kubectl` and `deployplane` command of a fenced block whose
language is `sh`, `bash`, `shell` or `console` (there, the lines after a `$ ` prompt).
Each one either runs on `make demo` as written (tests/e2e/test_demo.py runs it there) or
matches a rule of `NOT_ON_THE_DEMO`, which says why it cannot; a command that does
neither fails tests/unit/codebase/test_doc_commands.py, so a new one is never left untested.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DOCS", "NOT_ON_THE_DEMO", "DocCommand", "doc_commands", "why_not_on_the_demo"]

DOCS = ("README.md", "docs/install.md")
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
PROGRAMS = frozenset({"kubectl", "deployplane"})

NOT_ON_THE_DEMO: tuple[tuple[str, str], ...] = (
    (
        r"\bdeployplane-system\b",
        "the namespace of a chart or kustomize install: the demo runs the operator as a "
        "process (its log: .deployplane/demo/operator.log), not as a release",
    ),
    (r"(-n|--namespace)[ =]argocd\b", "Argo CD's namespace: the demo runs no Argo CD"),
    (r"\bapply -k manifests/", "installs the operator (the kustomize base): the demo runs its own"),
    (r"\bcreate namespace (demo|agents)\b", "the demo made this namespace already"),
    (r"<[a-z][a-z-]*>", "a placeholder the reader fills in"),
)
"""(pattern, why) of the commands that cannot run on the demo as written."""

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class DocCommand:
    doc: str
    line: int
    """The line of the doc the command starts on (for messages only)."""
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def doc_commands(root: Path) -> list[DocCommand]:
    """Every `kubectl` and `deployplane` command of the docs' shell blocks, in order."""
    found: list[DocCommand] = []
    for doc in DOCS:
        text = (root / doc).read_text()
        for fence in _FENCE.finditer(text):
            if fence.group(1) not in SHELL_LANGUAGES:
                continue
            first_line = text.count("\n", 0, fence.start(2)) + 1
            console = fence.group(1) == "console"
            for offset, command in _commands(fence.group(2), console=console):
                if _program(command) in PROGRAMS:
                    found.append(DocCommand(doc, first_line + offset, command))
    return found


def why_not_on_the_demo(command: DocCommand) -> str | None:
    """The reason it cannot run on the demo as written, or None: it must run there."""
    for pattern, why in NOT_ON_THE_DEMO:
        if re.search(pattern, command.text):
            return why
    return None


def _commands(block: str, *, console: bool) -> Iterator[tuple[int, str]]:
    """(line offset, command) of a block: a command goes on over lines ending in `\\`
    and over lines inside a quote it opened; in a console block only what follows a
    `$ ` prompt is a command (the rest is output)."""
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        start = index
        index += 1
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command = line
        while index < len(lines) and (command.endswith("\\") or not _complete(command)):
            command = f"{command}\n{lines[index]}"
            index += 1
        yield start, command


def _complete(command: str) -> bool:
    try:
        shlex.split(command, comments=True)
    except ValueError:  # a quote still open: the command goes on
        return False
    return True


def _program(command: str) -> str | None:
    """The command's program, after any `VAR=value` assignments."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    for word in words:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            return word
    return None
