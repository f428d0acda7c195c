"""The shell commands the docs give a user, taken from the Markdown as it is (whatever its
headings or order): every `kubectl` and `deployplane` command of a fenced block whose
language is `sh`, `bash`, `shell` or `console` (there, the lines after a `$ ` prompt).
Each one either runs on `make demo` as written (tests/e2e/test_demo.py runs it there) or
matches a rule of `NOT_ON_THE_DEMO`, which says why it cannot; a command that does
neither fails tests/unit/codebase/test_doc_commands.py, so a new one is never left untested.

docs/gitops.md (`GITOPS_DOCS`) is run on `make demo GITOPS=1` instead
(tests/e2e/gitops/test_gitops_demo.py), every command of its blocks whatever the program
(git, cp, variables: its commands build on each other, in one shell, in order), but
those matching a rule of `NOT_ON_THE_GITOPS_DEMO`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCS",
    "GITOPS_DOCS",
    "NOT_ON_THE_DEMO",
    "NOT_ON_THE_GITOPS_DEMO",
    "DocCommand",
    "doc_commands",
    "gitops_doc_commands",
    "why_not_on_the_demo",
    "why_not_on_the_gitops_demo",
]

DOCS = ("README.md", "docs/install.md")
GITOPS_DOCS = ("docs/gitops.md",)
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

NOT_ON_THE_GITOPS_DEMO: tuple[tuple[str, str], ...] = (
    (r"^make\b", "builds the tools or starts the demo: the test has started it"),
    (r"\bdev cluster (up|down)\b", "a dev cluster of its own: the demo runs one"),
    (
        r"\.deployplane/cluster/|127\.0\.0\.1:41231",
        "the dev cluster's state and git server (a free port; the demo's are "
        ".deployplane/demo/cluster/ and 127.0.0.1:18081)",
    ),
    (r'"finalizers":\s*null', "releases a resource by hand once the operator is gone"),
    (r"\bdeployplane-system\b", "the namespace of a chart install: the demo runs no release"),
    (r"<[a-z][a-z-]*>", "a placeholder the reader fills in"),
)
"""(pattern, why) of docs/gitops.md's commands that cannot run on `make demo GITOPS=1`."""

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class DocCommand:
    doc: str
    line: int
    """The line of the doc the command starts on (for messages only)."""
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def doc_commands(
    root: Path, docs: tuple[str, ...] = DOCS, programs: frozenset[str] | None = PROGRAMS
) -> list[DocCommand]:
    """Every `kubectl` and `deployplane` command (of `programs`; None: every command) of
    the shell blocks of `docs`, in order."""
    found: list[DocCommand] = []
    for doc in docs:
        text = (root / doc).read_text()
        for fence in _FENCE.finditer(text):
            if fence.group(1) not in SHELL_LANGUAGES:
                continue
            first_line = text.count("\n", 0, fence.start(2)) + 1
            console = fence.group(1) == "console"
            for offset, command in _commands(fence.group(2), console=console):
                if programs is None or _program(command) in programs:
                    found.append(DocCommand(doc, first_line + offset, command))
    return found


def gitops_doc_commands(root: Path) -> list[DocCommand]:
    """Every command of docs/gitops.md's shell blocks, in order."""
    return doc_commands(root, GITOPS_DOCS, None)


def why_not_on_the_gitops_demo(command: DocCommand) -> str | None:
    """The reason it cannot run on `make demo GITOPS=1` as written, or None."""
    for pattern, why in NOT_ON_THE_GITOPS_DEMO:
        if re.search(pattern, command.text):
            return why
    return None


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
