"""How the scripts of `deployplane completion SHELL` ask, and how they read the answer.

The scripts are typer's: each runs `deployplane` with `_DEPLOYPLANE_COMPLETE=complete_SHELL`
and the command line so far in variables (bash: `COMP_WORDS`, `COMP_CWORD`; zsh and
fish: `_TYPER_COMPLETE_ARGS`; PowerShell: that and `_TYPER_COMPLETE_WORD_TO_COMPLETE`),
and reads what it prints, in typer's formats (`typer._completion_classes`). The words
are split as click splits them (`click.shell_completion.split_arg_string`: POSIX shell
words, an unclosed quote or escape ending the last one), without `shlex`, whose
import of `re` would cost a TAB more than the rest of its answer.

Help texts are printed on one line, as written (typer would render them with rich,
wrapped at the terminal's width). Where there is nothing to offer, the shell's file
names are offered only in place of a path or a free value, never of a resource's name, a
choice, a command or an option (typer's scripts would offer the current directory's
files there): zsh is told nothing, fish is told these are the arguments, bash gets the
exit code `NO_FILES`, which the bash script of `deployplane completion` reads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["NO_FILES", "SHELLS", "Answer", "Item", "answer", "request", "split"]

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")

Item = tuple[str, "str | None"]
"""What a TAB offers: a value and its help."""
Answer = tuple[str, int]
"""What to print (nothing: `""`, no line at all) and the exit code."""
NO_FILES = 3
"""bash's exit code for "nothing, and no file names either": the script of `deployplane
completion bash` then turns off the file names its `complete -o default` offers when a
completion finds nothing (`compopt +o default`)."""

_WHITESPACE = " \t\r\n"
_QUOTES = "'\""


def split(line: str) -> list[str]:
    """The words of `line` as a POSIX shell reads them (quotes and backslashes); an
    unclosed quote or a trailing backslash ends the last word as it stands."""
    words: list[str] = []
    word = ""
    started = False  # a word is under way (possibly empty: "")
    quote = ""  # the quote we are inside of
    chars = iter(line)
    for char in chars:
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                escaped = next(chars, None)
                if escaped is None:
                    words.append(word)
                    return words
                word += escaped if escaped in '\\"' else "\\" + escaped
            else:
                word += char
        elif char in _WHITESPACE:
            if started:
                words.append(word)
                word, started = "", False
        elif char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                words.append(word)
                return words
            word, started = word + escaped, True
        elif char in _QUOTES:
            quote, started = char, True
        else:
            word, started = word + char, True
    if started:
        words.append(word)
    return words


def request(shell: str, environ: Mapping[str, str]) -> tuple[list[str], str]:
    """The complete words after the program's name, and the word being completed."""
    if shell == "bash":
        words = split(environ["COMP_WORDS"])
        at = int(environ["COMP_CWORD"])
        return words[1:at], words[at] if at < len(words) else ""
    line = environ.get("_TYPER_COMPLETE_ARGS", "")
    words = split(line)
    if shell in ("powershell", "pwsh"):
        incomplete = environ.get("_TYPER_COMPLETE_WORD_TO_COMPLETE", "")
        return (words[1:-1] if incomplete else words[1:]), incomplete
    args = words[1:]
    if args and not line.endswith(" "):
        return args[:-1], args[-1]
    return args, ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _zsh(text: str) -> str:
    return (
        text.replace('"', '""')
        .replace("'", "''")
        .replace("$", "\\$")
        .replace("`", "\\`")
        .replace(":", r"\\:")
    )


def answer(
    shell: str, items: Sequence[Item], environ: Mapping[str, str], *, files: bool = True
) -> Answer:
    """What the script of `shell` reads for `items`; with nothing to offer, the shell's
    own file names only where `files` allows them (typer's scripts would always fall
    back to them)."""
    if shell == "bash":
        code = 0 if items or files else NO_FILES
        return "\n".join(value for value, _ in items) + "\n", code
    if shell == "zsh":
        if not items:
            return ("_files\n" if files else ""), 0
        lines = [
            f'"{_zsh(value)}":"{_one_line(_zsh(help))}"' if help else f'"{_zsh(value)}"'
            for value, help in items
        ]
        return "_arguments '*: :((" + "\n".join(lines) + "))'\n", 0
    if shell == "fish":
        action = environ.get("_TYPER_COMPLETE_FISH_ACTION", "")
        if action == "is-args":  # whether to offer these rather than file names
            return "", 0 if items or not files else 1
        if action == "get-args" and items:
            return "\n".join(f"{v}\t{_one_line(h)}" if h else v for v, h in items) + "\n", 0
        return "\n", 0
    lines = [f"{value}:::{_one_line(help) if help else ' '}" for value, help in items]
    return "\n".join(lines) + "\n", 0
