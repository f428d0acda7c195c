"""The database the emulator tests run on.

`database_url` is SQLite (a file in the test's tmp_path) unless the test is marked
`postgres`: then it runs twice, on SQLite and on a throwaway PostgreSQL server
(`tests/support/postgres.py`, one per session, the database emptied for each test);
`postgres(only=True)` runs it on PostgreSQL alone.

Without PostgreSQL binaries those runs skip, except under CI=true where they fail:
CI must prove the PostgreSQL support rather than quietly skip it.

When the image-build tests (test_imagebuild.py) are selected, each test process builds
(or finds cached) this checkout's agent base before its first test, outside every
test's timeout (tests/support/agentbase.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support import agentbase
from tests.support.postgres import PostgresServer, find_bin, missing_reason

BACKENDS = ["sqlite", "postgresql"]
IMAGE_BUILDS = Path(__file__).parent / "test_imagebuild.py"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("postgres")
    if "database_url" in metafunc.fixturenames and marker is not None:
        backends = ["postgresql"] if marker.kwargs.get("only") else BACKENDS
        metafunc.parametrize("database_url", backends, indirect=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or agentbase.skip_reason() is not None:
        return
    if any(item.path == IMAGE_BUILDS for item in session.items):
        agentbase.prepare()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    reason = missing_reason()
    if reason is not None:
        if _in_ci():
            pytest.fail(f"CI=true and no PostgreSQL for the emulator tests: {reason}")
        pytest.skip(reason)
    bindir = find_bin()
    assert bindir is not None
    server = PostgresServer.start(bindir)
    yield server
    server.stop()


@pytest.fixture
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An SQLAlchemy URL of an empty database for the emulator under test."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'controlplane.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.fresh_database()
