"""The emulator's remote build (`emulator/builds/tarballcheck.py`): its log never shows the
credentials of a requirement's URL."""

from __future__ import annotations

import json

import pytest
from tests.support.tarballs import tarball

from deployplane.emulator.builds.tarballcheck import check_build


def project(dependencies: list[str]) -> bytes:
    config = {"graphs": {"agent": "./agent.py:graph"}, "dependencies": dependencies}
    return tarball({"langgraph.json": json.dumps(config), "agent.py": "graph = None\n"})


@pytest.mark.parametrize(
    ("dependency", "shown"),
    [
        (
            "pkg @ git+https://bob:ghp_secret123@github.com/acme/pkg.git",
            "Installing pkg @ git+https://***@github.com/acme/pkg.git",
        ),
        (
            "https://user:hunter2@host.example/x y",  # not a requirement: the failure line
            "Build failed: dependency 'https://***@host.example/x y' is neither a path "
            "nor a package requirement",
        ),
        ("langgraph>=0.2", "Installing langgraph>=0.2"),
    ],
)
def test_a_requirement_url_shows_without_its_credentials(dependency: str, shown: str) -> None:
    result = check_build(project([dependency]), "langgraph.json")
    messages = [message for _, message in result.lines]
    assert shown in messages
    assert not any("ghp_secret123" in m or "hunter2" in m for m in messages)
