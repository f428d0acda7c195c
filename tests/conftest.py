"""Shared test configuration.

Every test process (each pytest-xdist worker) runs with a configuration directory of
its own: XDG_CONFIG_HOME points at an empty directory of the session, and no context is
selected by the environment. The CLI reads its contexts from
`$XDG_CONFIG_HOME/deployplane/config.yaml` (`~/.config/...` by default), a file the
machine's user, a demo or another checkout's run may write at any time: a test that
names no configuration gets none, and a command a test runs writes to its own
directory, never to the user's. The tests of the contexts set their own directory.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deployplane.cli.clientconfig.options import ENV_CONTEXT

# skipcheck: `--skips-allowed`, with which each tier of `make test` fails on a skip it
# does not allow (tests/support/tiers.py); pytester: the plugin's own tests.
pytest_plugins = ("pytester", "tests.support.skipcheck")


@pytest.fixture(scope="session", autouse=True)
def private_cli_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        patch.delenv(ENV_CONTEXT, raising=False)
        yield
