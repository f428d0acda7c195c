"""TAB completion as a user gets it: `deployplane completion bash` sourced in bash
itself (without the bash-completion package), its completion function called with
`COMP_WORDS`/`COMP_CWORD`/`COMP_LINE` as bash's readline calls it, the script asking
`deployplane __complete`, against the emulator on 127.0.0.1 (commands, options, and the
names of deployments, listeners and revisions the control plane has)."""

from __future__ import annotations

import contextlib
import os
import re
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
from tests.support.emulator_serve import serve

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


def tab(
    words: list[str],
    url: str,
    line: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Tab:
    """Source the bash script, then complete the last of `words` as bash would: `words`
    as bash splits the line (at COMP_WORDBREAKS' `=` and `:` too), `line` the line
    itself (default: the words with a space between them)."""
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
COMP_LINE={_quoted(line if line is not None else " ".join(words))}
COMP_POINT=${{#COMP_LINE}}
"$function" deployplane "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
echo "$registered"
echo "compopt:$turned"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DEPLOYPLANE_")},
        "COLUMNS": "",  # no width known: the values alone
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": KEY,
        **(env or {}),
    }
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=cwd,
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
        (["deployplane", "dev", "cluster", "up", "--no-c"], ["--no-controller-manager"]),
    ],
    ids=["command", "commands", "a group's command", "an option", "an option's values", "deep"],
)
def test_commands_and_options(emulator: Seeded, words: list[str], expected: list[str]) -> None:
    done = tab(words, emulator.url)
    assert sorted(done.offered) == sorted(expected)
    assert done.stderr == ""
    assert not done.files


def test_an_option_and_its_value_in_one_word(emulator: Seeded) -> None:
    """bash splits `--output=j` at `=`; the script joins it back to ask deployplane,
    and offers the value alone (bash replaces what follows the `=`)."""
    words = ["deployplane", "deployments", "list", "--output", "=", "j"]
    done = tab(words, emulator.url, line="deployplane deployments list --output=j")
    assert done.offered == ["json"]
    empty = ["deployplane", "deployments", "list", "--output", "="]
    every = tab(empty, emulator.url, line="deployplane deployments list --output=")
    assert sorted(every.offered) == ["json", "name", "table", "wide", "yaml"]


def test_descriptions_beside_the_values_at_the_terminals_width(emulator: Seeded) -> None:
    done = tab(["deployplane", "co"], emulator.url, env={"COLUMNS": "80"})
    assert len(done.offered) == 3
    config = next(o for o in done.offered if o.startswith("config "))
    assert config == "config        (Contexts: named connections to a control plane.)"
    assert all(len(o) <= 80 for o in done.offered)
    one = tab(["deployplane", "dep"], emulator.url, env={"COLUMNS": "80"})
    assert one.offered == ["deployments"]  # inserted: without its description


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


def test_directories_where_a_directory_is_wanted(emulator: Seeded, tmp_path: Path) -> None:
    (tmp_path / "out-dir").mkdir()
    (tmp_path / "out-file").write_text("")
    done = tab(["deployplane", "export", "--dir", "out"], emulator.url, cwd=tmp_path)
    assert done.offered == ["out-dir"]


@contextlib.contextmanager
def socket_that_never_answers() -> Iterator[str]:
    """A listening socket nobody accepts from: a request to it waits for its timeout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(0)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


# ------------------------------------------------------------ zsh and fish


_ZSH_DRIVER = r"""
# zsh -f DRIVER SCRIPT LINE: what an interactive zsh shows after LINE and a TAB (zpty:
# a pseudo-terminal, so that zsh's line editor and completion system really run)
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='> '; autoload -U compinit; compinit -D; source ${(q)1}"
zpty -w z "zstyle ':completion:*' list-prompt ''; unsetopt beep; print READY"
local all="" chunk
local -i quiet=0 waited=0
while [[ $all != *$'\nREADY'* ]] && (( waited++ < 300 )); do
  zpty -r -t z chunk && all+=$chunk || sleep 0.1
done
all=""
zpty -w -n z "$2"$'\t'
# the screen once nothing more comes for 3 s (a TAB's answer takes a tenth of that)
while (( quiet < 30 && waited++ < 900 )); do
  if zpty -r -t z chunk; then all+=$chunk; quiet=0; else (( quiet++ )); sleep 0.1; fi
done
print -r -- "$all"
zpty -d z
"""


def shell_env(url: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("DEPLOYPLANE_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEPLOYPLANE_CONTROL_PLANE_URL": url,
        "DEPLOYPLANE_API_KEY": KEY,
    }


def zsh_tab(line: str, url: str, cwd: Path) -> str:
    """The screen of an interactive zsh after `line` and a TAB, without its escapes."""
    script = cwd / "deployplane.zsh"
    script.write_text(script_of("zsh", url))
    driver = cwd / "driver.zsh"
    driver.write_text(_ZSH_DRIVER)
    done = subprocess.run(
        ["zsh", "-f", str(driver), str(script), line],
        capture_output=True,
        text=True,
        timeout=120,
        env=shell_env(url),
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", done.stdout).replace("\r", "\n")
    return "\n".join(" ".join(row.split()) for row in plain.splitlines() if row.strip())


def script_of(shell: str, url: str) -> str:
    done = subprocess.run(
        ["deployplane", "completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
        env=shell_env(url),
        check=True,
    )
    return done.stdout


needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
needs_fish = pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish")


@needs_zsh
def test_zsh_lists_commands_with_their_descriptions(emulator: Seeded, tmp_path: Path) -> None:
    screen = zsh_tab("deployplane co", emulator.url, tmp_path)
    assert "config -- Contexts: named connections to a control plane." in screen
    assert "controlplane -- Run the control-plane emulator." in screen
    assert "completion -- Print the completion script" in screen


@needs_zsh
def test_zsh_inserts_the_one_value_that_fits(emulator: Seeded, tmp_path: Path) -> None:
    assert "deployplane deployments list --output=json" in zsh_tab(
        "deployplane deployments list --output=j", emulator.url, tmp_path
    )
    assert "deployplane deployments get other-bot" in zsh_tab(
        "deployplane deployments get oth", emulator.url, tmp_path
    )


@needs_zsh
def test_zsh_offers_file_names_only_where_a_file_is_wanted(
    emulator: Seeded, tmp_path: Path
) -> None:
    (tmp_path / "zz-file").write_text("")
    assert "deployplane apply -f zz-file" in zsh_tab(
        "deployplane apply -f zz", emulator.url, tmp_path
    )
    screen = zsh_tab("deployplane deployments get zz", emulator.url, tmp_path)
    assert "zz-file" not in screen


def fish_tab(line: str, url: str, cwd: Path) -> list[str]:
    """What fish offers for `line` (`complete --do-complete`: fish's own completion)."""
    script = cwd / "deployplane.fish"
    script.write_text(script_of("fish", url))
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete --do-complete {line!r}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=shell_env(url),
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@needs_fish
def test_fish_offers_commands_options_values_and_names(emulator: Seeded, tmp_path: Path) -> None:
    assert fish_tab("deployplane dep", emulator.url, tmp_path) == [
        "deployments\tCreate, change, delete and wait for deployments."
    ]
    assert fish_tab("deployplane deployments list --output=j", emulator.url, tmp_path) == [
        "--output=json"
    ]
    offered = fish_tab("deployplane deployments get sup", emulator.url, tmp_path)
    assert offered == ["support-bot", "support-bot-docker"]


@needs_fish
def test_fish_offers_file_names_only_where_a_file_is_wanted(
    emulator: Seeded, tmp_path: Path
) -> None:
    (tmp_path / "zz-file").write_text("")
    assert fish_tab("deployplane apply -f zz", emulator.url, tmp_path) == ["zz-file"]
    assert fish_tab("deployplane deployments get zz", emulator.url, tmp_path) == []
    assert fish_tab("deployplane deployments get ", "", tmp_path) == []
