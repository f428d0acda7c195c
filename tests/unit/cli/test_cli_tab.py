"""A TAB answered without typer (`deployplane.cli.tab`) offers what click offers: the
tree is generated from the commands, and for every command, at every kind of position
(a command's name, an option's name, an option's value, an argument, after `--`, after a
mistyped word), the quick answer equals click's own (`click.shell_completion`, through
the real command line), with the control plane's names faked the same way for both.
The shells' requests are read and answered as typer's scripts read and print them."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any

import click
import pytest
import typer
from click.shell_completion import split_arg_string
from hypothesis import given
from hypothesis import strategies as st

from deployplane.cli import treegen
from deployplane.cli.commands.completion import bash_script
from deployplane.cli.config.options import ConnectionOptions
from deployplane.cli.root import PROG, app
from deployplane.cli.tab import COMPLETE_VAR, answer, names, shells
from deployplane.cli.tab.offer import completions
from deployplane.cli.tab.tree import TREE

typer.completion.completion_init()  # typer's shell classes, as the root registers them


def test_the_tree_is_generated_from_the_commands() -> None:
    assert treegen.drifted() == [], (
        "deployplane/cli/tab/tree/ drifted from the commands: run make docs-cli"
    )


def test_no_command_is_left_to_click() -> None:
    """Every command is modelled: none is marked for click's slower answer."""

    def marked(node: Mapping[str, Any], path: str) -> Iterator[str]:
        if node.get("fallback"):
            yield path
        for name, sub in node.get("sub", {}).items():
            yield from marked(sub, f"{path} {name}")

    assert list(marked(TREE, PROG)) == []


# ------------------------------------------------ the same answers as click's own


@pytest.fixture
def fake_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names that say which connection and which `ref` they were asked with."""

    def fake(kind: str) -> Any:
        def offer(options: ConnectionOptions, incomplete: str, ref: str | None) -> list[str]:
            said = f"{kind}-{options.url}-{options.api_key}-{options.context}-{ref}"
            return [n for n in ("alpha", "beta", said) if n.startswith(incomplete)]

        return offer

    monkeypatch.setattr(names, "KINDS", {kind: fake(kind) for kind in names.KINDS})
    for variable in ("DEPLOYPLANE_CONTROL_PLANE_URL", "DEPLOYPLANE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("DEPLOYPLANE_CONTEXT", "from-env")


@functools.cache
def cli() -> click.Command:
    """The real command line (its groups loaded once, as used)."""
    return typer.main.get_command(app)


def clicks(args: list[str], incomplete: str) -> list[tuple[str, str | None]]:
    complete = click.shell_completion.BashComplete(cli(), {}, PROG, COMPLETE_VAR)
    return [(item.value, item.help) for item in complete.get_completions(args, incomplete)]


def paths(node: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in node.get("sub", {}).items():
        yield from paths(sub, (*path, name))


def node_at(path: tuple[str, ...]) -> Mapping[str, Any]:
    node: Mapping[str, Any] = TREE
    for name in path:
        node = node["sub"][name]
    return node


def requests(path: tuple[str, ...]) -> Iterator[tuple[list[str], str]]:
    """Command lines at every kind of position of the command at `path`."""
    node = node_at(path)
    words = list(path)
    for incomplete in ("", "-", "--", "--n", "--h", "x", "d", "-o", "="):
        yield words, incomplete
    yield [*words, "--"], ""
    yield [*words, "--", "-x"], ""
    yield [*words, "--bogus"], ""
    yield [*words, "-Z"], "-"
    yield [*words, "value"], ""
    yield [*words, "value", "other"], ""
    yield [*words, "value", "other", "third"], "t"
    for name in node.get("sub", {}):
        yield words, name[:1]
    for param in node["params"]:
        if param[0] == "argument":
            continue
        opts = [*param[2], *param[3]]
        for opt in opts:
            yield [*words, opt], ""
            yield [*words, opt], "-"
            yield [*words, opt, "v"], ""
            yield [*words, opt, "v"], "--"
            if opt.startswith("--"):
                yield words, f"{opt}="
                yield words, f"{opt}=j"
                yield [*words, f"{opt}=value"], ""
            else:
                yield [*words, f"{opt}value"], ""
                yield [*words, f"{opt}"], "y"
        if not param[4]:
            yield [*words, param[2][0]], param[2][0]
    # options of a group given before its command; the connection for names
    if len(path) >= 2:
        head, tail = list(path[:1]), list(path[1:])
        yield [*head, "--url", "http://u", *tail], ""
        yield [*head, "--url", "http://u", *tail, "--url=http://v"], ""
        yield [*head, "--context", "ctx", *tail, "ref"], ""
        yield [*head, "--api-key", "k", *tail, "--url", "http://w", "ref"], "a"


CASES = [
    pytest.param(args, incomplete, id=" ".join([PROG, *args, repr(incomplete)]))
    for path in paths(TREE)
    for args, incomplete in requests(path)
]


def test_every_kind_of_position_is_covered() -> None:
    assert len(CASES) > 1000


@pytest.mark.usefixtures("fake_names")
def test_every_answer_is_clicks() -> None:
    """One test over all the cases (thousands: one test each would cost more in pytest
    than the comparisons)."""
    wrong = []
    for case in CASES:
        args, incomplete = case.values
        ours = completions(TREE, list(args), str(incomplete), os.environ)
        theirs = clicks(list(args), str(incomplete))
        if ours != theirs:
            wrong.append(f"{case.id}: ours {ours!r}, click's {theirs!r}")
    assert wrong == []


@pytest.mark.usefixtures("fake_names")
@pytest.mark.parametrize(
    ("args", "incomplete", "expected"),
    [
        (["deployments", "get"], "", ["alpha", "beta", "deployments-None-None-from-env-None"]),
        (["deployments", "get", "--url", "http://u"], "a", ["alpha"]),
        (
            ["deployments", "--url", "http://g", "get", "--url", "http://c"],
            "d",
            ["deployments-http://c-None-from-env-None"],
        ),
        (["revisions", "get", "support-bot"], "r", ["revisions-None-None-from-env-support-bot"]),
        (["listeners", "delete"], "l", ["listeners-None-None-from-env-None"]),
        (["deployments", "list", "--status"], "R", ["ready"]),
    ],
)
def test_names_are_asked_with_the_connection_typed_so_far(
    args: list[str], incomplete: str, expected: list[str]
) -> None:
    ours = completions(TREE, args, incomplete, os.environ)
    assert [value for value, _ in ours] == expected
    assert ours == clicks(args, incomplete)


# ------------------------------------------------------------ the shells' words


@given(st.text(alphabet=" \t\n'\"\\ab-=", max_size=12))
def test_words_are_split_as_click_splits_them(line: str) -> None:
    assert shells.split(line) == split_arg_string(line)


REQUESTS = [
    ("bash", {"COMP_WORDS": "deployplane\ndeployments\nget\nal", "COMP_CWORD": "3"}),
    ("bash", {"COMP_WORDS": "deployplane deployments ", "COMP_CWORD": "2"}),
    ("bash", {"COMP_WORDS": "deployplane 'dep", "COMP_CWORD": "1"}),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "deployplane deployments get al"}),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "deployplane deployments "}),
    (
        "fish",
        {"_TYPER_COMPLETE_ARGS": "deployplane dep", "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
    ),
    ("fish", {"_TYPER_COMPLETE_ARGS": "deployplane ", "_TYPER_COMPLETE_FISH_ACTION": "is-args"}),
    (
        "fish",
        {"_TYPER_COMPLETE_ARGS": "deployplane apply -f ", "_TYPER_COMPLETE_FISH_ACTION": "is-args"},
    ),
    (
        "powershell",
        {
            "_TYPER_COMPLETE_ARGS": "deployplane deployments l",
            "_TYPER_COMPLETE_WORD_TO_COMPLETE": "l",
        },
    ),
    (
        "pwsh",
        {
            "_TYPER_COMPLETE_ARGS": "deployplane deployments ",
            "_TYPER_COMPLETE_WORD_TO_COMPLETE": "",
        },
    ),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "deployplane deployments list -o "}),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "deployplane deployments list --name "}),
    ("bash", {"COMP_WORDS": "deployplane dev cluster up --", "COMP_CWORD": "4"}),
]


def typers(shell: str, environ: Mapping[str, str]) -> tuple[tuple[list[str], str], str, int]:
    """typer's reading of the request, and its answer (printed, exit code)."""
    kind = click.shell_completion.get_completion_class(shell)
    assert kind is not None
    complete = kind(cli(), {}, PROG, COMPLETE_VAR)
    try:
        return complete.get_completion_args(), complete.complete() + "\n", 0
    except SystemExit as exit:  # fish's is-args answers by its exit code alone
        return complete.get_completion_args(), "", int(exit.code or 0)


@pytest.mark.usefixtures("fake_names")
@pytest.mark.parametrize(("shell", "variables"), REQUESTS, ids=lambda v: str(v))
def test_each_shell_is_answered_as_typers_script_reads_it(
    shell: str, variables: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {COMPLETE_VAR: f"complete_{shell}", **variables}.items():
        monkeypatch.setenv(name, value)
    request, printed, code = typers(shell, os.environ)
    assert shells.request(shell, os.environ) == request
    assert answer(os.environ) == (printed, code)


def test_help_is_one_line_where_typer_would_wrap_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMPLETE_VAR, "complete_zsh")
    monkeypatch.setenv("_TYPER_COMPLETE_ARGS", "deployplane listener run --autos")
    answered = answer(os.environ)
    assert answered is not None
    assert answered[0].count("\n") == 1
    assert '"--autoscaler":"The queue\'\'s autoscaler\\\\: hpa (CPU) or keda' in answered[0]


@pytest.mark.parametrize("instruction", ["source_bash", "complete_tcsh", "complete"])
def test_what_it_does_not_know_is_left_to_click(instruction: str) -> None:
    assert answer({COMPLETE_VAR: instruction}) is None


def test_a_broken_request_is_left_to_click() -> None:
    assert answer({COMPLETE_VAR: "complete_bash", "COMP_WORDS": "deployplane "}) is None


NO_NAMES = [
    ("bash", {"COMP_WORDS": "deployplane deployments get ", "COMP_CWORD": "3"}, ("\n", 3)),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "deployplane deployments get "}, ("", 0)),
    (
        "fish",
        {
            "_TYPER_COMPLETE_ARGS": "deployplane deployments get ",
            "_TYPER_COMPLETE_FISH_ACTION": "is-args",
        },
        ("", 0),
    ),
]


@pytest.mark.parametrize(("shell", "variables", "expected"), NO_NAMES, ids=lambda v: str(v)[:40])
def test_no_names_offers_no_file_names_either(
    shell: str,
    variables: dict[str, str],
    expected: tuple[str, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No connection, so no deployment names: the shell must not fall back to the
    current directory's files, as typer's scripts do on an empty answer (bash: exit
    NO_FILES, read by the script; zsh: no `_files`; fish: these are the arguments)."""
    for name in ("DEPLOYPLANE_CONTROL_PLANE_URL", "DEPLOYPLANE_API_KEY", "DEPLOYPLANE_CONTEXT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent/deployplane-test")
    for name, value in {COMPLETE_VAR: f"complete_{shell}", **variables}.items():
        monkeypatch.setenv(name, value)
    assert answer(os.environ) == expected


def test_a_path_still_offers_the_shells_file_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMPLETE_VAR, "complete_zsh")
    monkeypatch.setenv("_TYPER_COMPLETE_ARGS", "deployplane deployments list --name ")
    assert answer(os.environ) == ("_files\n", 0)


def test_the_bash_script_turns_file_names_off_on_no_files() -> None:
    script = bash_script("deployplane")
    assert f"if [[ $? -eq {shells.NO_FILES} ]]; then compopt +o default; fi" in script
    assert script.index("compopt") < script.index("return 0")
