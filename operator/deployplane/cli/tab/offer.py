"""What a TAB offers, worked out as click works it out, over the generated tree.

Click answers a TAB in two steps (`click.shell_completion`): it parses the complete
words as the commands would, leniently, to find the command being typed
(`_resolve_context`), then asks the last word's owner: an option expecting a value, the
first argument still without one, else the command itself, which offers its commands
(a group) and, for a word starting with `-`, its options not given yet
(`_resolve_incomplete`). This module does the same over `deployplane.cli.tab.tree`
(what click knows of each command, generated from them), parsing as click's parser
parses: `--opt=value`, `-ovalue`, clustered flags, `--` ending the options, a group
taking no option after its command's name. A parse error stops the parse there, as it
stops click's. tests/unit/cli/test_cli_tab.py checks that every command offers what click
offers.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from deployplane.cli.tab.shells import Item

__all__ = ["Parsed", "completions", "offer", "parse"]

_CONNECTION = ("url", "api_key", "tenant_id", "context")
# The fields of a parameter of the tree: ("option", name, opts, secondary opts, is a
# flag, multiple, hidden, help, variables, values) or ("argument", name, nargs, values).
_NAME, _OPTS, _SECONDARY, _FLAG, _MULTIPLE, _HIDDEN, _HELP, _ENVVARS = range(1, 9)
_NARGS = 2
_VALUES = -1


class _Stop(Exception):
    """A usage error: click's lenient parse stops there."""


class _Unset:
    """No value (click's `UNSET`)."""


_UNSET = _Unset()


class Parsed:
    """One command's share of the words: what was given, and the words left after it
    (for a group: its command's name and what follows)."""

    def __init__(self) -> None:
        self.given: dict[str, Any] = {}
        self.rest: list[str] = []


def _is_option(param: Sequence[Any]) -> bool:
    return bool(param[0] == "option")


def _takes_value(param: Sequence[Any]) -> bool:
    return _is_option(param) and not param[_FLAG]


def _unpack(args: list[str], nargs: list[int]) -> tuple[list[Any], list[str]]:
    """click's `_unpack_args`: each argument's share of `args` (`-1`: the rest, taken
    from the end after the arguments that follow it), and what is left over."""
    values: list[Any] = []
    rest = list(args)
    star = None
    for position, count in enumerate(nargs):
        if count == 1:
            values.append(rest.pop(0) if rest else _UNSET)
        else:
            star = position
            values.append(_UNSET)
            break
    if star is not None:
        tail: list[Any] = []
        for _ in nargs[star + 1 :]:
            tail.insert(0, rest.pop() if rest else _UNSET)
        values[star] = tuple(rest)
        values += tail
        rest = []
    return values, rest


def parse(node: Mapping[str, Any], args: Sequence[str]) -> Parsed:
    """Parse `args` as the command of `node` does (click's parser, leniently)."""
    return _Parser(node, args).run()


class _Parser:
    """click's `OptionParser` over one command of the tree: the options it knows take
    their values, the rest are its arguments; where click would fail, parsing stops."""

    def __init__(self, node: Mapping[str, Any], args: Sequence[str]) -> None:
        self.node = node
        self.parsed = Parsed()
        self.arguments = [p for p in node["params"] if not _is_option(p)]
        self.short: dict[str, Any] = {}
        self.long: dict[str, Any] = {}
        for param in (p for p in node["params"] if _is_option(p)):
            for name in (*param[_OPTS], *param[_SECONDARY]):
                (self.short if len(name) == 2 and name[1] != "-" else self.long)[name] = param
        self.rargs = list(args)
        self.largs: list[str] = []

    def run(self) -> Parsed:
        try:
            self._options()
            values, self.parsed.rest = _unpack(
                self.largs + self.rargs, [p[_NARGS] for p in self.arguments]
            )
            for param, value in zip(self.arguments, values, strict=True):
                if value is not _UNSET:
                    self._given(param, value)
        except _Stop:
            self.parsed.rest = self.largs
        return self.parsed

    def _options(self) -> None:
        rargs = self.rargs
        while rargs:
            arg = rargs.pop(0)
            if arg == "--":
                break
            if arg[:1] == "-" and len(arg) > 1:
                self._option(arg)
            elif self.node["interspersed"]:
                self.largs.append(arg)
            else:
                rargs.insert(0, arg)
                break

    def _option(self, arg: str) -> None:
        name, equals, explicit = arg.partition("=")
        if name in self.long:
            param = self.long[name]
            if equals:
                if not _takes_value(param):
                    raise _Stop  # "does not take a value"
                self.rargs.insert(0, explicit)
            self._given(param, self._value_of(param))
        elif arg[:2] != "--":
            self._short_options(arg)
        else:
            raise _Stop  # no such option

    def _short_options(self, arg: str) -> None:
        for at, char in enumerate(arg[1:], start=2):
            param = self.short.get(arg[0] + char)
            if param is None:
                raise _Stop  # no such option
            if _takes_value(param) and at < len(arg):
                self.rargs.insert(0, arg[at:])  # -ovalue
                self._given(param, self._value_of(param))
                return
            self._given(param, self._value_of(param))

    def _value_of(self, param: Sequence[Any]) -> Any:
        if not _takes_value(param):
            return True
        if not self.rargs:
            raise _Stop  # "requires an argument"
        return self.rargs.pop(0)

    def _given(self, param: Sequence[Any], value: Any) -> None:
        self.parsed.given[param[_NAME]] = value


def _context(
    tree: Mapping[str, Any], args: Sequence[str]
) -> list[tuple[Mapping[str, Any], Parsed]] | None:
    """The commands the words go through, each with its share of them (the last: the
    command being typed); None where the tree leaves the answer to click."""
    levels = []
    node, rest = tree, list(args)
    while True:
        if node.get("fallback"):
            return None
        parsed = parse(node, rest)
        levels.append((node, parsed))
        sub = node.get("sub", {}).get(parsed.rest[0]) if parsed.rest else None
        if sub is None:
            return levels
        node, rest = sub, parsed.rest[1:]


def _own(node: Mapping[str, Any], parsed: Parsed, incomplete: str) -> list[Item]:
    """What a command itself offers: its commands, and its options not given yet when
    the word starts like one."""
    found: list[Item] = [
        (name, help) for name, help in node.get("commands", ()) if name.startswith(incomplete)
    ]
    if incomplete and not incomplete[0].isalnum():
        for param in node["params"]:
            if not _is_option(param) or param[_HIDDEN]:
                continue
            if param[_NAME] in parsed.given and not param[_MULTIPLE]:
                continue
            names = (*param[_OPTS], *param[_SECONDARY])
            found += [(name, param[_HELP]) for name in names if name.startswith(incomplete)]
    return found


def _connection(
    levels: Sequence[tuple[Mapping[str, Any], Parsed]], environ: Mapping[str, str]
) -> dict[str, str | None]:
    """The connection options as the command would read them: given after the command
    wins over given after its group; else their variables."""
    found: dict[str, str | None] = dict.fromkeys(_CONNECTION)
    for name in _CONNECTION:
        typed = [p.given[name] for _, p in reversed(levels) if isinstance(p.given.get(name), str)]
        if typed:
            found[name] = typed[0]
            continue
        for node, _ in reversed(levels):
            for param in node["params"]:
                if _is_option(param) and param[_NAME] == name:
                    found[name] = next(
                        (environ[v] for v in param[_ENVVARS] if environ.get(v)), None
                    )
            if found[name] is not None:
                break
    return found


def _values(
    param: Sequence[Any],
    levels: Sequence[tuple[Mapping[str, Any], Parsed]],
    incomplete: str,
    environ: Mapping[str, str],
) -> list[Item]:
    """What a parameter's value completes to."""
    values = param[_VALUES]
    if values is None:
        return []
    if values[0] == "choices":
        _, choices, case_sensitive = values
        if case_sensitive:
            return [(c, None) for c in choices if c.startswith(incomplete)]
        return [(c, None) for c in choices if c.lower().startswith(incomplete.lower())]
    if values[0] == "path":  # click's marker for the shell's own file names
        return [(incomplete, None)]
    from deployplane.cli.config.options import ConnectionOptions
    from deployplane.cli.tab.names import offered

    options = ConnectionOptions(**_connection(levels, environ))
    ref = levels[-1][1].given.get("ref")
    names = offered(values[1], options, incomplete, ref if isinstance(ref, str) else None)
    return [(name, None) for name in names if name.startswith(incomplete)]


def offer(
    tree: Mapping[str, Any], args: Sequence[str], incomplete: str, environ: Mapping[str, str]
) -> tuple[list[Item], bool] | None:
    """What a TAB offers after the complete words `args` for the word `incomplete`, and
    whether the shell may offer its file names instead when that is nothing (only for a
    value click leaves to the shell: a path, or a value without completions of its
    own; never for a resource's name, a choice, a command or an option); None where
    click must answer."""
    levels = _context(tree, args)
    if levels is None:
        return None
    node, parsed = levels[-1]
    words = list(args)
    if incomplete == "=":
        incomplete = ""
    elif "=" in incomplete and incomplete.startswith("-"):
        name, _, incomplete = incomplete.partition("=")
        words.append(name)
    if "--" not in words and incomplete.startswith("-"):
        return _own(node, parsed, incomplete), False
    for param in node["params"]:  # an option waiting for its value
        if _takes_value(param) and words and words[-1] in param[_OPTS]:
            return _values(param, levels, incomplete, environ), _files(param)
    for param in node["params"]:  # the first argument still without one
        if not _is_option(param) and (param[_NARGS] == -1 or param[_NAME] not in parsed.given):
            return _values(param, levels, incomplete, environ), _files(param)
    return _own(node, parsed, incomplete), False


def _files(param: Sequence[Any]) -> bool:
    values = param[_VALUES]
    return values is None or values[0] == "path"


def completions(
    tree: Mapping[str, Any], args: Sequence[str], incomplete: str, environ: Mapping[str, str]
) -> list[Item] | None:
    """What a TAB offers after the complete words `args` for the word `incomplete`;
    None where click must answer."""
    offered = offer(tree, args, incomplete, environ)
    return None if offered is None else offered[0]
