"""The remote build's layout of an uploaded project (emulator/builds/imagebuild/layout.py):
where each local dependency lands in the image, what pip installs, and the graphs'
paths rewritten into LANGSERVE_GRAPHS, as langgraph-cli's `langgraph dockerfile` lays
them out; refusals with their reason."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any

import pytest

from deployplane.emulator.builds.imagebuild.layout import LayoutError, plan_build
from deployplane.emulator.builds.imagebuild.runner import BuildFailed, load_into_dev_cluster


def lister(files: list[str]):  # type: ignore[no-untyped-def]
    """listdir over an archive made of `files` (paths)."""

    def listdir(rel: str) -> list[str] | None:
        rel = posixpath.normpath(rel)
        prefix = "" if rel == "." else rel + "/"
        entries = {f[len(prefix) :].split("/")[0] for f in files if f.startswith(prefix)}
        return sorted(entries) if entries else None

    return listdir


def plan(config: dict[str, Any], files: list[str], config_path: str = "langgraph.json"):  # type: ignore[no-untyped-def]
    return plan_build(config, config_path, lister(files), project="my-agent")


def graphs(built: Any) -> Any:
    return json.loads(built.env["LANGSERVE_GRAPHS"])


def test_a_project_without_pyproject_is_a_faux_package_in_src() -> None:
    built = plan(
        {"graphs": {"agent": "./agent.py:graph"}, "dependencies": [".", "six==1.17.0"]},
        ["langgraph.json", "agent.py", "requirements.txt"],
    )
    assert built.copies == [(".", "/deps/outer-my-agent/src")]
    assert graphs(built) == {"agent": "/deps/outer-my-agent/src/agent.py:graph"}
    assert built.requirements == ["six==1.17.0"]
    assert built.requirement_files == ["requirements.txt"]
    assert built.import_paths == ["/deps/outer-my-agent/src"]
    assert built.working_dir == "/deps/outer-my-agent/src"
    assert built.local_packages == []


def test_a_project_with_pyproject_is_a_real_package_under_its_name() -> None:
    built = plan(
        {"graphs": {"a": "./src/app/graph.py:make_graph"}, "dependencies": ["."]},
        ["langgraph.json", "pyproject.toml", "src/app/graph.py"],
    )
    assert built.copies == [(".", "/deps/my-agent")]
    assert graphs(built) == {"a": "/deps/my-agent/src/app/graph.py:make_graph"}
    assert built.local_packages == ["."]
    assert built.import_paths == []


def test_a_flat_package_and_a_sibling_directory_of_a_nested_config() -> None:
    built = plan(
        {
            "graphs": {"g": {"path": "./agent/graph.py:graph", "description": "d"}},
            "dependencies": ["./agent", "../shared"],
        },
        ["app/langgraph.json", "app/agent/__init__.py", "app/agent/graph.py", "shared/x.py"],
        config_path="app/langgraph.json",
    )
    assert built.copies == [
        ("app/agent", "/deps/outer-agent/agent"),
        ("shared", "/deps/outer-shared/src"),
    ]
    assert graphs(built) == {
        "g": {"path": "/deps/outer-agent/agent/graph.py:graph", "description": "d"}
    }
    assert built.import_paths == ["/deps/outer-agent", "/deps/outer-shared/src"]


def test_two_real_packages_of_one_name_get_numbered() -> None:
    built = plan(
        {"graphs": {"g": "./a/lib/g.py:graph"}, "dependencies": ["./a/lib", "./b/lib"]},
        ["langgraph.json", "a/lib/setup.py", "a/lib/g.py", "b/lib/pyproject.toml"],
    )
    assert [dest for _, dest in built.copies] == ["/deps/lib", "/deps/lib_1"]


def test_the_servers_settings_become_its_environment() -> None:
    config = {
        "graphs": {"agent": "./agent.py:graph"},
        "dependencies": ["."],
        "auth": {"path": "./auth.py:auth"},
        "http": {"cors": {"allow_origins": ["*"]}},
        "store": {"ttl": {"default_ttl": 10}},
    }
    built = plan(config, ["langgraph.json", "agent.py"])
    assert json.loads(built.env["LANGGRAPH_AUTH"]) == config["auth"]
    assert json.loads(built.env["LANGGRAPH_HTTP"]) == config["http"]
    assert json.loads(built.env["LANGGRAPH_STORE"]) == config["store"]


def test_another_python_version_is_a_warning() -> None:
    built = plan(
        {"graphs": {"a": "./a.py:g"}, "dependencies": ["."], "python_version": "3.12"},
        ["langgraph.json", "a.py"],
    )
    assert built.warnings == ["python_version 3.12 asked; the agent base has Python 3.11"]


@pytest.mark.parametrize(
    ("config", "files", "reason"),
    [
        ({"graphs": {}, "dependencies": ["."]}, [],
         "config has no graphs (a non-empty object 'graphs' is required)"),
        ({"graphs": {"a": "./a.py:g"}}, ["a.py"], "'dependencies' must be a list"),
        ({"graphs": {"a": "./a.py:g"}, "dependencies": ["./lib"]}, ["a.py"],
         "local dependency ./lib is not a directory of the source archive"),
        ({"graphs": {"a": "./a.py:g"}, "dependencies": ["../../etc"]}, ["a.py"],
         "local dependency ../../etc is outside the source archive"),
        ({"graphs": {"a": "./other/a.py:g"}, "dependencies": ["./lib"]}, ["lib/x.py", "other/a.py"],
         "graph 'a': ./other/a.py is not inside a local dependency"),
        ({"graphs": {"a": "./a.py"}, "dependencies": ["."]}, ["a.py"],
         "graph 'a': './a.py' is not 'path/to/file.py:attribute'"),
        ({"graphs": {"a": "./a.py:g"}, "dependencies": ["."], "dockerfile_lines": ["RUN x"]},
         ["a.py"], "dockerfile_lines are not supported by this remote build"),
        ({"graphs": {"a": "./a.ts:g"}, "dependencies": ["."], "node_version": "20"}, ["a.ts"],
         "JavaScript graphs (node_version) are not supported by this remote build"),
        ({"graphs": {"a": "./langgraph/a.py:g"}, "dependencies": ["./langgraph"]},
         ["langgraph/__init__.py", "langgraph/a.py"],
         "local dependency ./langgraph: 'langgraph' cannot be a package name"),
        ({"graphs": {"a": "./a.py:g"}, "dependencies": [""]}, ["a.py"],
         "a dependency is not a non-empty string"),
    ],
)  # fmt: skip
def test_refusals_say_why(config: dict[str, Any], files: list[str], reason: str) -> None:
    with pytest.raises(LayoutError) as caught:
        plan(config, ["langgraph.json", *files])
    assert str(caught.value) == reason


def test_importing_into_a_dev_cluster_without_a_real_node_fails_with_the_clis_reason(
    tmp_path: Path,
) -> None:
    lines: list[tuple[str, str]] = []
    archive = tmp_path / "deployplane-agent-0123456789abcdef.tar"
    archive.write_bytes(b"")
    with pytest.raises(BuildFailed) as caught:
        load_into_dev_cluster(archive, tmp_path / "no-cluster", lambda *line: lines.append(line))
    assert str(caught.value) == (
        "the image could not be imported into the node: no dev cluster with a real node in "
        f"{tmp_path / 'no-cluster'}; run `up --real-node`"
    )
    assert lines[0] == ("INFO", f"Importing {archive.name} into the dev cluster's real node")
