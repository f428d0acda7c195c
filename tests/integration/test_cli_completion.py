"""TAB completion as a user gets it: `deployplane completion bash` sourced in bash
itself, its completion function called with `COMP_WORDS`/`COMP_CWORD` as bash's
readline calls it, against the emulator on 127.0.0.1 (commands, options, and the names
of deployments, listeners and revisions the control plane has)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from test_controlplane_cli import serve

KEY = "completion-key"
BIN = Path(sys.executable).parent
DEPLOYMENTS = ("support-bot", "support-bot-docker", "other-bot")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@dataclass(frozen=True)
class Seeded:
    url: str
    revision_id: str


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    cwd = tmp_path_factory.mktemp("completion")
    with serve("--api-key", KEY, cwd=cwd) as (_, url):
        with httpx.Client(base_url=url, headers={"X-Api-Key": KEY}, timeout=30) as client:
            listener = client.post(
                "/v2/listeners",
                json={
                    "compute_type": "k8s",
                    "compute_id": "dev-cluster",
                    "compute_config": {"k8s_namespaces": ["default"]},
                },
            )
            listener.raise_for_status()
            latest = ""
            for name in DEPLOYMENTS:
                created = client.post(
                    "/v2/deployments",
                    json={
                        "name": name,
                        "source": "external_docker",
                        "source_revision_config": {"image_uri": f"registry.example.com/{name}:v1"},
                    },
                )
                created.raise_for_status()
                latest = created.json()["latest_revision_id"]
        yield Seeded(url, latest)


@dataclass(frozen=True)
class Tab:
    offered: list[str]
    stderr: str
    registered: str
    files: bool
    """Whether readline's file names stay on (the script did not turn them off)."""


def tab(words: list[str], url: str) -> Tab:
    """Source the bash script, then complete the last of `words` as bash would."""
    # compopt works only while readline completes; the function's call is recorded.
    script = f"""
set -u
turned=""
compopt() {{ turned="$turned $1 $2"; }}
source <(deployplane completion bash)
registered=$(complete -p deployplane)
function=$(sed -E 's/.* -F ([^ ]+) .*/\\1/' <<<"$registered")
COMP_WORDS=({" ".join(_quoted(w) for w in words)})
COMP_CWORD={len(words) - 1}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$function" deployplane "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
echo "$registered"
echo "compopt:$turned"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DEPLOYPLANE_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": KEY,
    }
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    registered, turned, *offered = done.stdout.splitlines()
    files = "+o default" not in turned
    return Tab([o for o in offered if o], done.stderr, registered, files)


def _quoted(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def test_the_script_registers_a_completion_function(emulator: Seeded) -> None:
    done = tab(["deployplane", ""], emulator.url)
    assert done.registered.startswith("complete ")
    assert " -F " in done.registered
    assert done.registered.endswith(" deployplane")


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["deployplane", "dep"], ["deployments"]),
        (["deployplane", "co"], ["completion", "config", "controlplane"]),
        (["deployplane", "deployments", "port"], ["port-forward"]),
        (["deployplane", "deployments", "list", "--no-"], ["--no-headers"]),
        (
            ["deployplane", "deployments", "list", "-o", ""],
            ["table", "wide", "json", "yaml", "name"],
        ),
    ],
    ids=["command", "commands", "a group's command", "an option", "an option's values"],
)
def test_commands_and_options(emulator: Seeded, words: list[str], expected: list[str]) -> None:
    done = tab(words, emulator.url)
    assert sorted(done.offered) == sorted(expected)
    assert done.stderr == ""


def test_deployment_names_from_the_control_plane(emulator: Seeded) -> None:
    done = tab(["deployplane", "deployments", "get", "sup"], emulator.url)
    assert done.offered == ["support-bot", "support-bot-docker"]
    every = tab(["deployplane", "deployments", "logs", ""], emulator.url)
    assert every.offered == sorted(DEPLOYMENTS)
    several = tab(["deployplane", "deployments", "delete", "other-bot", "o"], emulator.url)
    assert several.offered == ["other-bot"]


def test_listener_names_and_revision_ids(emulator: Seeded) -> None:
    assert tab(["deployplane", "listeners", "delete", "d"], emulator.url).offered == ["dev-cluster"]
    revisions = tab(["deployplane", "revisions", "get", "other-bot", ""], emulator.url)
    assert revisions.offered == [emulator.revision_id]


def test_a_control_plane_that_does_not_answer_offers_nothing_and_prints_nothing(
    emulator: Seeded,
) -> None:
    with socket_that_never_answers() as url:
        started = time.monotonic()
        done = tab(["deployplane", "deployments", "get", ""], url)
        waited = time.monotonic() - started
    assert done.offered == []
    assert done.stderr == ""
    assert waited < 30  # the request gave up (its timeout is 2 s; this machine is shared)


def test_no_connection_configured_offers_nothing_and_prints_nothing(emulator: Seeded) -> None:
    """Nothing at all: not the current directory's files either (bash's `complete -o
    default` would offer them when the function offers nothing)."""
    done = tab(["deployplane", "deployments", "get", ""], "")
    assert done.offered == []
    assert done.stderr == ""
    assert not done.files


def test_file_names_are_left_to_bash_only_where_a_file_is_wanted(emulator: Seeded) -> None:
    assert tab(["deployplane", "apply", "-f", ""], emulator.url).files
    assert not tab(["deployplane", "deployments", "get", "no-such"], emulator.url).files
    assert not tab(["deployplane", "no-such-command"], emulator.url).files


@contextlib.contextmanager
def socket_that_never_answers() -> Iterator[str]:
    """A listening socket nobody accepts from: a request to it waits for its timeout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(0)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
