"""`deployplane __complete WORDS... CURRENT`, cobra's protocol, answered from the command
table: every command, option and option value completes (walked over the whole table,
so a command added later is held to it too), names come from the control plane with
the connection typed so far, and the directive tells the shell where file names may be
offered instead (never for a command, an option, a choice or a resource's name: not
even when no name fits)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from deployplane.cli.clientconfig.options import ConnectionOptions
from deployplane.cli.helptext import summary
from deployplane.cli.params import has_completer
from deployplane.cli.root import root
from deployplane.cli.tab import complete, names
from deployplane.cli.tab.complete import (
    DIRECTIVE_ERROR,
    DIRECTIVE_FILTER_DIRS,
    DIRECTIVE_NO_FILE_COMP,
)

FILES = 0


def ask(*words: str, descriptions: bool = True) -> tuple[list[str], int]:
    """The lines `deployplane __complete WORDS` prints, and its directive."""
    name = "__complete" if descriptions else "__completeNoDesc"
    result = CliRunner().invoke(root, [name, *words], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stderr == ""
    *lines, directive = result.stdout.splitlines()
    assert directive.startswith(":"), result.stdout
    return lines, int(directive[1:])


def values(*words: str) -> list[str]:
    lines, _ = ask(*words)
    return [line.split("\t")[0] for line in lines]


def every_command() -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Each visible command of the table, by the words that lead to it."""

    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[Any]:
        yield path, command
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    yield from walk(sub, (*path, name))

    yield from walk(root, ())


COMMANDS = list(every_command())
IDS = [" ".join(("deployplane", *path)) for path, _ in COMMANDS]


def options_of(command: click.Command) -> list[click.Option]:
    ctx = click.Context(command)
    found = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
    return [p for p in found if not p.hidden]


def test_the_table_is_walked_whole() -> None:
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"deployments list", "listener run", "dev cluster up", "plan", "approve"} <= paths
    assert len(COMMANDS) > 50


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_command_completes_its_commands_and_options(
    path: tuple[str, ...], command: click.Command
) -> None:
    if isinstance(command, click.Group):
        lines, directive = ask(*path, "")
        ctx = click.Context(command)
        visible = [n for n in command.list_commands(ctx) if not command.commands[n].hidden]
        expected = [f"{n}\t{summary(command.commands[n])}" for n in visible]
        assert lines == expected
        assert directive == DIRECTIVE_NO_FILE_COMP
    names_of_options = [name for p in options_of(command) for name in (*p.opts, *p.secondary_opts)]
    lines, directive = ask(*path, "-")
    offered = [line.split("\t")[0] for line in lines]
    assert sorted(offered) == sorted(names_of_options)
    assert directive == DIRECTIVE_NO_FILE_COMP
    for line in lines:  # a description is one line, the option's help
        assert "\n" not in line


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_option_value_completes_as_its_type_says(
    path: tuple[str, ...], command: click.Command
) -> None:
    for param in options_of(command):
        if param.is_flag or param.count:
            continue
        flag = param.opts[0]
        lines, directive = ask(*path, flag, "")
        if isinstance(param.type, click.Choice):
            choices = [str(c) for c in param.type.choices]
            assert [v.lower() for v in lines] == [c.lower() for c in choices], flag
            assert directive == DIRECTIVE_NO_FILE_COMP, flag
        elif isinstance(param.type, click.Path) and not param.type.file_okay:
            assert (lines, directive) == ([], DIRECTIVE_FILTER_DIRS), flag
        elif not has_completer(param):
            assert (lines, directive) == ([], FILES), flag


def test_a_value_given_as_option_equals_value_completes_the_value() -> None:
    assert values("deployments", "list", "--output=j") == ["json"]
    assert values("deployments", "list", "-o", "Y") == ["yaml"]


def test_an_option_given_is_not_offered_again() -> None:
    offered = values("deployments", "list", "--limit", "3", "--")
    assert "--limit" not in offered
    assert "--output" in offered


def test_what_follows_a_command_with_nothing_left_to_take_offers_nothing_not_files() -> None:
    assert ask("deployments", "list", "") == ([], DIRECTIVE_NO_FILE_COMP)
    assert ask("no-such-command") == ([], DIRECTIVE_NO_FILE_COMP)
    assert ask("deployments", "no-such-command") == ([], DIRECTIVE_NO_FILE_COMP)


def test_a_file_is_offered_by_the_shell_where_a_file_is_wanted() -> None:
    assert ask("apply", "-f", "") == ([], FILES)
    assert ask("dev", "cluster", "load-image", "") == ([], FILES)
    assert ask("export", "--dir", "") == ([], DIRECTIVE_FILTER_DIRS)


def test_without_descriptions_the_values_come_alone() -> None:
    lines, directive = ask("de", descriptions=False)
    assert (lines, directive) == (["deployments", "dev", "demo"], DIRECTIVE_NO_FILE_COMP)


def test_an_error_is_the_error_directive_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(complete, "_resolve_incomplete", broken)
    assert ask("deployments", "") == ([], DIRECTIVE_ERROR)


# ------------------------------------------------ names from the control plane


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


@pytest.mark.usefixtures("fake_names")
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["deployments", "get", ""], ["alpha", "beta", "deployments-None-None-from-env-None"]),
        (["deployments", "get", "--url", "http://u", "a"], ["alpha"]),
        (
            ["deployments", "--url", "http://g", "get", "--url", "http://c", "d"],
            ["deployments-http://c-None-from-env-None"],
        ),
        (
            ["deployments", "--url", "http://g", "logs", "d"],
            ["deployments-http://g-None-from-env-None"],
        ),
        (
            ["deployments", "--context", "ctx", "delete", "x", "d"],
            ["deployments-None-None-ctx-None"],
        ),
        (["revisions", "get", "support-bot", "r"], ["revisions-None-None-from-env-support-bot"]),
        (["revisions", "redeploy", "bot", "--wait", "r"], ["revisions-None-None-from-env-bot"]),
        (["listeners", "delete", "l"], ["listeners-None-None-from-env-None"]),
        (["listeners", "get", "--api-key", "k", "l"], ["listeners-None-k-from-env-None"]),
    ],
)
def test_names_are_asked_with_the_connection_typed_so_far(
    words: list[str], expected: list[str]
) -> None:
    assert ask(*words) == (expected, DIRECTIVE_NO_FILE_COMP)


def test_no_connection_configured_offers_nothing_and_no_file_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing at all: the shell must not offer the current directory's files in place
    of a deployment's name."""
    for variable in ("DEPLOYPLANE_CONTROL_PLANE_URL", "DEPLOYPLANE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    assert ask("deployments", "get", "") == ([], DIRECTIVE_NO_FILE_COMP)
    assert ask("revisions", "list", "") == ([], DIRECTIVE_NO_FILE_COMP)


def test_context_names_come_from_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert ask("config", "use-context", "") == ([], DIRECTIVE_NO_FILE_COMP)  # no file yet
    config = tmp_path / "deployplane" / "config.yaml"
    config.parent.mkdir()
    config.write_text(
        "current_context: dev\ncontexts:\n  - name: dev\n  - name: prod\n  - name: dev-2\n"
    )
    assert values("config", "use-context", "") == ["dev", "dev-2", "prod"]
    assert values("config", "use-context", "p") == ["prod"]
    assert values("deployments", "list", "--context", "d") == ["dev", "dev-2"]
    config.write_text("{not yaml")
    assert ask("deployments", "--context", "") == ([], DIRECTIVE_NO_FILE_COMP)


def test_kube_contexts_come_from_the_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("contexts:\n  - name: kind-dev\n  - name: prod\n")
    other = tmp_path / "other"
    other.write_text("contexts:\n  - name: other\n")
    monkeypatch.setenv("KUBECONFIG", f"{kubeconfig}:{other}")
    assert values("trace", "--kube-context", "") == ["kind-dev", "prod"]
    assert values("plan", "--kubeconfig", str(other), "--kube-context", "") == ["other"]
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert ask("approve", "x", "--kube-context", "") == ([], DIRECTIVE_NO_FILE_COMP)


def fake_kubectl(directory: Path, exit_code: int = 0) -> Path:
    """A kubectl that records its arguments and lists three namespaces."""
    directory.mkdir(exist_ok=True)
    kubectl = directory / "kubectl"
    kubectl.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > "{directory}/args"\n'
        "printf 'namespace/default\\nnamespace/demo\\nnamespace/kube-system\\n'\n"
        f"exit {exit_code}\n"
    )
    kubectl.chmod(0o755)
    return directory / "args"


@pytest.mark.parametrize(
    "words",
    [
        ["trace", "agd/x", "-n"],
        ["approve", "x", "--namespace"],
        ["plan", "-f", "-", "-n"],
        ["export", "-n"],
        ["deployments", "port-forward", "x", "0", "-n"],
    ],
    ids=" ".join,
)
def test_namespaces_are_kubectls_own_answer(
    words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kubectl(tmp_path / "bin")
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(tmp_path / "bin"))
    assert ask(*words, "d") == (["default", "demo"], DIRECTIVE_NO_FILE_COMP)


def test_namespaces_are_read_with_the_kubeconfig_and_context_typed_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = fake_kubectl(tmp_path / "bin")
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(tmp_path / "bin"))
    words = ["trace", "--kubeconfig", "/k/config", "--kube-context", "dev", "agd/x", "-n"]
    assert values(*words, "") == ["default", "demo", "kube-system"]
    recorded = args.read_text().split()
    assert recorded[:4] == ["get", "namespaces", "-o", "name"]
    assert "--kubeconfig /k/config --context dev" in " ".join(recorded)


def test_no_namespaces_when_kubectl_fails_or_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kubectl(tmp_path / "bin", exit_code=1)
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(tmp_path / "bin"))
    assert ask("trace", "agd/x", "-n", "") == ([], DIRECTIVE_NO_FILE_COMP)
    monkeypatch.setenv("DEPLOYPLANE_TOOLS_BIN", str(tmp_path / "nowhere"))
    assert ask("trace", "agd/x", "-n", "") == ([], DIRECTIVE_NO_FILE_COMP)
