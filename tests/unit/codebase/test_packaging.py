"""What can be proven about the image without a container engine: the wheel the
Dockerfile's builder stage makes installs into a fresh environment and its entry points
work, and the Dockerfile itself has the properties the chart relies on (non-root uid
10001, no build tools in the final stage, the operator as entrypoint)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
BUILD_TOOLS = ("gcc", "g++", "build-essential", "make", "clang", "cc ")


# ---------------------------------------------------------------- the Dockerfile


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [a for i, a in self.instructions if i == instruction]


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages with their instructions; line continuations joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in logical:
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            m = re.match(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", rest, re.IGNORECASE)
            assert m, line
            stages.append(Stage(base=m.group(1), name=m.group(2)))
        elif stages:
            stages[-1].instructions.append((instruction, rest.strip()))
    return stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_dockerfile_is_multi_stage_on_slim_python_311(stages: list[Stage]) -> None:
    # Every stage on the BASE_IMAGE argument, whose default is the official slim
    # Python 3.11 (so `docker build .` needs no argument); `make image` passes another.
    assert len(stages) >= 2
    for stage in stages:
        assert stage.base == "${BASE_IMAGE}"
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG PYTHON_VERSION=3\.11$", text, re.MULTILINE)
    default = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.MULTILINE)
    assert default
    assert default.group(1) == "python:${PYTHON_VERSION}-slim"
    # declared before the first FROM: only such an ARG may be used in FROM lines
    assert text.index("ARG BASE_IMAGE=") < text.index("\nFROM ")


def test_builder_stage_builds_a_wheel(stages: list[Stage]) -> None:
    builder = stages[0]
    assert any("pip wheel" in run for run in builder.args("RUN"))


def test_final_stage_runs_as_non_root_uid_10001(stages: list[Stage]) -> None:
    users = stages[-1].args("USER")
    assert users, "the final stage sets no USER: it would run as root"
    user = users[-1].split(":")[0]
    assert user == "10001"
    assert any("--uid 10001" in run for run in stages[-1].args("RUN"))


def test_final_stage_has_no_build_tools_or_source(stages: list[Stage]) -> None:
    final = stages[-1]
    for run in final.args("RUN"):
        assert "apt-get install" not in run, run
        assert "apk add" not in run, run
        for tool in BUILD_TOOLS:
            assert tool not in run, f"{tool!r} in the final stage: {run}"
    for copy in final.args("COPY") + final.args("ADD"):
        assert "--from=" in copy, f"the final stage copies from the build context: {copy}"
    assert any("--mount=type=bind,from=" in run for run in final.args("RUN"))
    assert any("pip install --no-index" in run for run in final.args("RUN"))


def test_entrypoint_runs_the_operator(stages: list[Stage]) -> None:
    entrypoints = stages[-1].args("ENTRYPOINT")
    assert entrypoints, "no ENTRYPOINT in the final stage"
    assert json.loads(entrypoints[-1]) == ["deployplane", "operator", "run"]


def test_dockerignore_keeps_the_context_to_what_the_image_needs() -> None:
    lines = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*", "everything is excluded unless re-included"
    included = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert included == {"pyproject.toml", "README.md", "operator"}
    copied = {
        src.rstrip("/")
        for stage in parse_dockerfile(DOCKERFILE.read_text())
        for copy in stage.args("COPY")
        if "--from=" not in copy
        for src in copy.split()[:-1]
    }
    assert copied <= included, f"COPY of paths the context excludes: {copied - included}"


# ------------------------------------------------------ the wheel, installed fresh


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the project's wheel, built from a copy of the sources
    (so no build/ or egg-info lands in the checkout). Its dependencies come from this
    interpreter's site-packages through a .pth line: such a line only extends sys.path,
    it does not run the editable-install hook that would import the checkout instead.

    Each step has its own bound; the tests that use it keep the default timeout, as the
    first of them (whichever the order) also spends this build's time (a minute on a
    loaded machine)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    shutil.copytree(
        ROOT / "operator", src / "operator", ignore=shutil.ignore_patterns("__pycache__")
    )
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip"]
    # Build requirements come from the package index, as in the Dockerfile's builder.
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-q", "--wheel-dir", str(dist), str(src)],
        check=True,
        timeout=120,
    )
    (wheel,) = dist.glob("deployplane-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=120,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}", "HOME": str(venv)}
    return subprocess.run(
        [str(venv / "bin" / "deployplane"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=venv,  # not the checkout: nothing may be imported from the source tree
        env=env,
    )


def test_wheel_entry_point_runs_the_operator_command(installed_wheel: Path) -> None:
    where = subprocess.run(
        [
            str(installed_wheel / "bin" / "python"),
            "-c",
            "import deployplane; print(deployplane.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed_wheel,
    ).stdout.strip()
    assert where.startswith(str(installed_wheel)), f"imported from {where}, not the wheel"

    top = _run(installed_wheel, "--help")
    assert top.returncode == 0, top.stderr
    for group in ("operator", "controlplane"):
        assert group in top.stdout

    run = _run(installed_wheel, "operator", "run", "--help")
    assert run.returncode == 0, run.stderr
    for option in ("--namespace", "--peering", "--liveness", "--json-logs"):
        assert option in run.stdout


def test_wheel_ships_the_package_data(installed_wheel: Path) -> None:
    site = next((installed_wheel / "lib").glob("python3*/site-packages"))
    assert (site / "deployplane" / "py.typed").is_file()
    serve = _run(installed_wheel, "controlplane", "serve", "--help")
    assert serve.returncode == 0, serve.stderr
    assert "--api-key" in serve.stdout


def test_every_third_party_import_of_the_package_is_a_declared_dependency() -> None:
    """What `operator/deployplane` imports is installed by `pip install deployplane`
    itself, not by luck through another package (aiohttp was imported, undeclared), and
    each declared dependency has an upper bound."""
    import ast
    import importlib.metadata as md
    import re
    import sys
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared_specs = [
        *project["dependencies"],
        *project["optional-dependencies"]["postgres"],
    ]

    def name_of(spec: str) -> str:
        return re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower().replace("_", "-")

    declared = {name_of(spec) for spec in declared_specs}
    for spec in declared_specs:
        bound = spec.split(";")[0]
        assert "<" in bound or name_of(spec) == "pydantic-core", f"{spec}: no upper bound"
    modules: set[str] = set()
    for path in (ROOT / "operator" / "deployplane").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - {"deployplane", "__future__"}
    distributions = md.packages_distributions()
    undeclared = {
        module: distributions.get(module)
        for module in third_party
        if not {d.lower().replace("_", "-") for d in distributions.get(module, [])} & declared
    }
    assert undeclared == {}
