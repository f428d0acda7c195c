"""`python -m bench.cli`: what a `deployplane` command costs, as a user meets it.

    .venv/bin/python -m bench.cli [--runs 7] [--cli PATH]

Each figure is the whole process: the user + system CPU seconds and the peak resident
memory of one `deployplane` process (read with `os.wait4`, so interpreter start-up and
every import count), and its wall time; the median of `--runs` runs, after one run
that is not counted (it warms the file cache and writes the bytecode, as installing a
package does: `PYTHONDONTWRITEBYTECODE` is not passed on).

- `cli_version_cpu_s`: `deployplane --version`.
- `cli_help_cpu_s`: `deployplane --help` and every command group's `--help`; the worst.
- `cli_complete_cpu_s`: TABs, as the scripts of `deployplane completion SHELL` ask them
  (`deployplane __complete WORDS... CURRENT`): the commands, a group's commands, a
  command's flags and the deployment names from the control plane; the worst. A
  request that does not answer what it should fails the benchmark.
- `cli_list_cpu_s` and `cli_list_wall_s`: `deployplane deployments list`.

The control plane is the demo's: `deployplane controlplane serve` on 127.0.0.1 with a
fresh SQLite file, holding what the demo's examples make (a listener and two
deployments), reached through the same `DEPLOYPLANE_*` variables `make demo` prints.
It runs as its own process, so its CPU is not counted.

The start-up of the long-running commands (`operator run`, `listener run`,
`controlplane serve`) is measured the same way, up to their program's own check of its
settings (a setting it refuses ends them there, `SERVERS`): `STARTUP` lines, without a
goal.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.controlplane import API_KEY, start_server
from bench.report import Figure

DEMO_DEPLOYMENTS = ("support-bot", "support-bot-docker")
DEMO_LISTENER = "dev-cluster"
GROUPS = (
    "deployments",
    "revisions",
    "listeners",
    "repos",
    "providers",
    "config",
    "controlplane",
    "dev",
    "operator",
    "listener",
    "demo",
)
SERVERS = (
    ("operator_run", ("operator", "run", "--readiness", "not-a-url")),
    # no control plane's URL: the agent's own check of its settings refuses it
    ("listener_run", ("listener", "run", "--listener-id", "x")),
    ("controlplane_serve", ("controlplane", "serve", "--strict", "--builtin-dataplane", "x")),
)
"""Each long-running command with a setting its program refuses (exit 2) once loaded,
before it starts anything."""


@dataclass(frozen=True)
class Run:
    cpu_s: float
    wall_s: float
    rss_mb: float
    code: int
    stdout: str


@dataclass(frozen=True)
class Measured:
    label: str
    runs: list[Run]

    @property
    def cpu_s(self) -> float:
        return statistics.median(r.cpu_s for r in self.runs)

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def rss_mb(self) -> float:
        return statistics.median(r.rss_mb for r in self.runs)

    def line(self) -> str:
        return (
            f"  {self.label:<44} cpu {self.cpu_s:.3f} s  wall {self.wall_s:.3f} s  "
            f"rss {self.rss_mb:.0f} MB"
        )


def run_once(argv: Sequence[str], env: Mapping[str, str]) -> Run:
    """One process, to its end: its own CPU time and peak RSS (not its children's)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stdout.close()
    return Run(
        cpu_s=usage.ru_utime + usage.ru_stime,
        wall_s=wall,
        rss_mb=usage.ru_maxrss / 1024,
        code=process.returncode,
        stdout=out,
    )


def measure(
    label: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    runs: int,
    check: Callable[[Run], bool] = lambda r: r.code == 0,
    *,
    lenient: bool = False,
) -> Measured:
    """`lenient`: measure even a command that does not answer what it should (an older
    build, without completion)."""
    run_once(argv, env)  # not counted: the file cache and the bytecode
    done = [run_once(argv, env) for _ in range(runs)]
    failed = [r for r in done if not check(r)]
    if failed and not lenient:
        raise SystemExit(f"{label}: exit {failed[0].code}, answered {failed[0].stdout!r}")
    measured = Measured(label, done)
    print(measured.line(), flush=True)
    return measured


def completion_argv(cli: Sequence[str], line: str) -> list[str]:
    """What the completion scripts run at a TAB after `line`: `deployplane __complete`,
    the words after the program's name, the last one the word being completed (empty
    after a space)."""
    return [*cli, "__complete", *line.split(" ")[1:]]


def answers(*expected: str) -> Callable[[Run], bool]:
    """Every one of `expected` among the words printed."""

    def check(run: Run) -> bool:
        offered = set(run.stdout.split())
        return run.code == 0 and set(expected) <= offered

    return check


def offers(*expected: str) -> Callable[[Run], bool]:
    """Every one of `expected` among the values a TAB offers (`VALUE<tab>HELP` lines,
    then `:DIRECTIVE`)."""

    def check(run: Run) -> bool:
        lines = run.stdout.splitlines()
        offered = {line.split("\t")[0] for line in lines[:-1]}
        return run.code == 0 and lines[-1:] != [":1"] and set(expected) <= offered

    return check


@contextlib.contextmanager
def demo_control_plane() -> Iterator[str]:
    """The emulator with what the demo's examples make; its URL."""
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as workdir:
        process, url = start_server(Path(workdir))
        try:
            headers = {"X-Api-Key": API_KEY}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                listener = client.post(
                    "/v2/listeners",
                    json={
                        "compute_type": "k8s",
                        "compute_id": DEMO_LISTENER,
                        "compute_config": {"k8s_namespaces": ["default"]},
                    },
                )
                listener.raise_for_status()
                for index, name in enumerate(DEMO_DEPLOYMENTS):
                    created = client.post(
                        "/v2/deployments",
                        json={
                            "name": name,
                            "source": "external_docker",
                            "source_config": {"listener_id": listener.json()["id"]},
                            "source_revision_config": {
                                "image_uri": f"registry.example.com/{name}:v{index}"
                            },
                        },
                    )
                    created.raise_for_status()
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


def default_cli() -> list[str]:
    """The `deployplane` console script beside this interpreter (as installed)."""
    script = Path(sys.executable).with_name("deployplane")
    if script.exists():
        return [str(script)]
    found = shutil.which("deployplane")
    if found is None:
        raise SystemExit("no deployplane command: make venv, or pass --cli")
    return [found]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (the median)")
    parser.add_argument("--cli", default=None, help="the deployplane command to measure")
    parser.add_argument(
        "--no-checks", action="store_true", help="measure wrong answers too (an older build)"
    )
    args = parser.parse_args()
    cli = [args.cli] if args.cli else default_cli()
    runs = args.runs
    # Bytecode as an installed package has it: the uncounted first run writes it, which
    # PYTHONDONTWRITEBYTECODE (set in some shells and sandboxes) would forbid, leaving
    # every run to compile deployplane's modules anew.
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DEPLOYPLANE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    base["PATH"] = os.environ.get("PATH", "")
    base["COLUMNS"] = "80"

    def timed(
        label: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        check: Callable[[Run], bool] = lambda r: r.code == 0,
    ) -> Measured:
        return measure(label, argv, env, runs, check, lenient=args.no_checks)

    print(f"== the deployplane CLI ({' '.join(cli)}), median of {runs} runs", flush=True)
    with demo_control_plane() as url:
        env = {
            **base,
            "DEPLOYPLANE_CONTROL_PLANE_URL": url,
            "DEPLOYPLANE_API_KEY": API_KEY,
        }
        version = timed("deployplane --version", [*cli, "--version"], env)
        helps = [timed("deployplane --help", [*cli, "--help"], env)]
        helps += [
            timed(f"deployplane {group} --help", [*cli, group, "--help"], env) for group in GROUPS
        ]
        completions = [
            timed(
                f"complete: deployplane {words}<TAB>",
                completion_argv(cli, f"deployplane {words}"),
                env,
                offers(*expected),
            )
            for words, expected in (
                ("", ("deployments", "completion")),
                ("deployments ", ("list", "get", "port-forward")),
                ("deployments list --", ("--output", "--no-headers")),
                ("deployments get ", DEMO_DEPLOYMENTS),
            )
        ]
        listing = timed(
            "deployplane deployments list",
            [*cli, "deployments", "list"],
            env,
            answers(*DEMO_DEPLOYMENTS),
        )
        starts = [
            timed(
                f"start-up: deployplane {' '.join(words)}",
                [*cli, *words],
                base,
                lambda r: r.code == 2,
            )
            for _, words in SERVERS
        ]

    worst_help = max(helps, key=lambda m: m.cpu_s)
    worst_complete = max(completions, key=lambda m: m.cpu_s)
    figures = [
        Figure("cli_version_cpu_s", version.cpu_s, "s", "<=", 0.10, digits=3),
        Figure("cli_help_cpu_s", worst_help.cpu_s, "s", "<=", 0.25, digits=3),
        Figure("cli_complete_cpu_s", worst_complete.cpu_s, "s", "<=", 0.15, digits=3),
        Figure("cli_list_cpu_s", listing.cpu_s, "s", "<=", 0.5, digits=3),
        Figure("cli_list_wall_s", listing.wall_s, "s", "<=", 0.7, digits=3),
    ]
    print(f"# worst --help: {worst_help.label}; worst completion: {worst_complete.label}")
    for (name, _), start in zip(SERVERS, starts, strict=True):
        print(f"STARTUP {name} cpu {start.cpu_s:.3f} s rss {start.rss_mb:.0f} MB", flush=True)
    for figure in figures:
        print(figure.line(), flush=True)
    return 0 if all(f.met for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
