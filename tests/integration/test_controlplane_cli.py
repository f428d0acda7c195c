"""`deployplane controlplane serve` as scripts use it: a real process on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml
from tests.support.emulator_app import ADMIN_KEY, KEY_A, config_data, image_body
from tests.support.emulator_serve import LISTENING, inherited_env, serve
from tests.support.postgres import PostgresServer

from deployplane.emulator.settings import MAX_LATENCY_MS

KEY_LINE = "deployplane dev API key: "


def test_dev_mode_prints_its_key_once_and_keeps_state_in_the_default_file(
    tmp_path: Path,
) -> None:
    with serve(cwd=tmp_path) as (lines, url):
        assert len(lines) == 2
        assert lines[0].startswith(KEY_LINE)
        key = lines[0].removeprefix(KEY_LINE)
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert httpx.get(f"{url}/v2/deployments").status_code == 401
        listed = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": key})
        assert listed.status_code == 200
    assert (tmp_path / ".deployplane" / "controlplane.db").exists()


def test_fixed_key_and_config_file(tmp_path: Path) -> None:
    with serve("--api-key", "fixed-key", cwd=tmp_path) as (lines, url):
        assert lines == [lines[-1]]  # no key printed when it was given
        ok = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": "fixed-key"})
        assert ok.status_code == 200
    config = tmp_path / "emulator.yaml"
    config.write_text(yaml.safe_dump(config_data(step_seconds=0.5)))
    database = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    with serve("--config", str(config), "--database", database, cwd=tmp_path) as (lines, url):
        assert len(lines) == 1
        ok = httpx.get(f"{url}/v2/listeners", headers={"X-Api-Key": KEY_A})
        assert ok.status_code == 200


def test_unknown_config_key_is_an_error_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "emulator.yaml"
    config.write_text(yaml.safe_dump({"pipeline": {"step_second": 1}}))
    result = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert "pipeline.step_second: unknown key" in result.stderr


def test_serves_from_postgresql_and_keeps_its_password_to_itself(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """The real command on a PostgreSQL URL; state survives a restart of the process,
    which reads the URL from DEPLOYPLANE_DATABASE_URL the second time."""
    database = postgres_server.fresh_database()
    password = postgres_server.password
    output: list[str] = []
    headers = {"X-Api-Key": "pg-key"}
    first = serve("--database", database, "--api-key", "pg-key", cwd=tmp_path, output=output)
    with first as (lines, url):
        assert httpx.get(f"{url}/healthz").status_code == 200
        created = httpx.post(f"{url}/v2/deployments", json=image_body(), headers=headers)
        assert created.status_code == 201, created.text
        output += lines
    env = {"DEPLOYPLANE_DATABASE_URL": database}
    with serve("--api-key", "pg-key", cwd=tmp_path, env=env, output=output) as (lines, url):
        got = httpx.get(f"{url}/v2/deployments/{created.json()['id']}", headers=headers)
        assert got.status_code == 200
        assert got.json()["name"] == "img-app"
        output += lines
    assert not (tmp_path / ".deployplane").exists()  # nothing fell back to SQLite
    assert password not in "\n".join(output)


def test_a_wrong_database_password_fails_startup_without_echoing_it(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    wrong = "not-the-password-4711"
    database = postgres_server.fresh_database().replace(postgres_server.password, wrong)
    result = subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**inherited_env(), "DEPLOYPLANE_DATABASE_URL": database},
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot open the database postgresql+asyncpg://")
    assert "password authentication failed" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert wrong not in result.stdout + result.stderr


def _serve_database(tmp_path: Path, database: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**inherited_env(), "DEPLOYPLANE_DATABASE_URL": database},
        timeout=60,
    )


def test_an_unreachable_database_is_one_line_naming_it_without_the_password(
    tmp_path: Path,
) -> None:
    secret = "pw-never-printed-0815"
    result = _serve_database(tmp_path, f"postgresql+asyncpg://emu:{secret}@127.0.0.1:1/emu")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot open the database postgresql+asyncpg://emu:***@")
    assert secret not in result.stdout + result.stderr


def test_a_malformed_database_url_is_one_line_without_echoing_it(tmp_path: Path) -> None:
    secret = "pw-never-printed-4242"
    result = _serve_database(tmp_path, f"postgres ql://emu:{secret}@host/db")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: the database URL is not a SQLAlchemy URL "
        "(sqlite+aiosqlite:///FILE or postgresql+asyncpg://USER:PASSWORD@HOST/DB)"
    )
    assert secret not in result.stdout


def test_sigterm_does_not_wait_on_injected_latency(tmp_path: Path) -> None:
    """A request held by the largest injected delay (10 s) is answered at once when the
    server is told to stop, and the server exits: shutdown never waits on faults."""
    config = tmp_path / "emulator.yaml"
    config.write_text(yaml.safe_dump(config_data(faults={"latency_ms": MAX_LATENCY_MS})))
    command = [sys.executable, "-m", "deployplane.cli", "controlplane", "serve"]
    process = subprocess.Popen(
        [*command, "--port", "0", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=inherited_env(),
    )
    answers: list[int] = []
    try:
        assert process.stdout is not None
        url = next(line for line in process.stdout if line.startswith(LISTENING)).strip()
        url = url.removeprefix("deployplane control plane listening on ")

        def delayed_request() -> None:
            headers = {"X-Api-Key": KEY_A}
            answers.append(
                httpx.get(f"{url}/v2/deployments", headers=headers, timeout=60).status_code
            )

        delayed = threading.Thread(target=delayed_request)
        delayed.start()
        admin = {"X-Admin-Key": ADMIN_KEY}
        while httpx.get(f"{url}/_emulator/stats", headers=admin).json()["in_delay"] != 1:
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        # bounds a hang only: the delay left is ~10 s, the exit takes a fraction of one
        process.wait(timeout=MAX_LATENCY_MS / 2000)
        delayed.join(timeout=MAX_LATENCY_MS / 2000)
    finally:
        process.kill()
        process.wait()
    assert answers == [200]


@pytest.mark.parametrize("key", ["password", "PASSWORD", "sslpassword", "passwd", "pwd"])
def test_a_password_in_the_url_query_is_masked_too(tmp_path: Path, key: str) -> None:
    secret = "pw-in-the-query-0815"
    url = f"postgresql+asyncpg://emu@127.0.0.1:1/emu?{key}={secret}&application_name=dp"
    result = _serve_database(tmp_path, url)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot open the database postgresql+asyncpg://emu@")
    assert f"{key}=***" in lines[0]
    assert "application_name=dp" in lines[0]  # what is not a secret is still shown
    assert secret not in result.stdout + result.stderr


def test_a_damaged_digest_key_file_is_one_line(tmp_path: Path) -> None:
    database = tmp_path / "cp.db"
    (tmp_path / "cp.db.digest-key").write_text("not hex\n")
    result = _serve_database(tmp_path, f"sqlite+aiosqlite:///{database}")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cp.db.digest-key does not hold a 64-digit hex key" in lines[0]


def test_admin_key_option_opens_the_emulator_endpoints(tmp_path: Path) -> None:
    admin = {"X-Admin-Key": "cli-admin-key"}
    with serve("--api-key", "tenant-key", "--admin-key", "cli-admin-key", cwd=tmp_path) as (
        _,
        url,
    ):
        assert httpx.get(f"{url}/_emulator/faults", headers=admin).status_code == 200
        tenant = {"X-Admin-Key": "tenant-key"}
        assert httpx.get(f"{url}/_emulator/faults", headers=tenant).status_code == 401
    with serve(cwd=tmp_path) as (_, url):  # dev mode without one
        assert httpx.get(f"{url}/_emulator/faults", headers=admin).status_code == 401
    command = [sys.executable, "-m", "deployplane.cli", "controlplane", "serve"]
    clash = subprocess.run(
        [*command, "--port", "0", "--api-key", "same-key", "--admin-key", "same-key"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=inherited_env(),
        timeout=60,
    )
    assert clash.returncode == 2
    assert "admin_api_keys" in clash.stderr
    assert "same-key" not in clash.stderr


def test_strict_flag_and_config_key_turn_the_extensions_off(tmp_path: Path) -> None:
    headers = {"X-Api-Key": "strict-key"}
    with serve("--api-key", "strict-key", "--strict", cwd=tmp_path) as (_, url):
        assert httpx.get(f"{url}/healthz").status_code == 404
        assert httpx.get(f"{url}/_emulator/stats", headers=headers).status_code == 404
        assert httpx.get(f"{url}/v2/deployments", headers=headers).status_code == 200
    config = tmp_path / "strict.yaml"
    config.write_text(yaml.safe_dump(config_data(strict=True)))
    with serve("--config", str(config), cwd=tmp_path) as (_, url):
        stats = httpx.get(f"{url}/_emulator/stats", headers={"X-Api-Key": KEY_A})
        assert stats.status_code == 404
        assert httpx.get(f"{url}/v2/listeners", headers={"X-Api-Key": KEY_A}).status_code == 200


def test_the_generated_dev_key_is_kept_with_the_database(tmp_path: Path) -> None:
    with serve(cwd=tmp_path) as (lines, url):
        key = lines[0].removeprefix(KEY_LINE)
    with serve(cwd=tmp_path) as (lines, url):
        assert lines[0] == f"{KEY_LINE}{key}"  # the same key after a restart
        listed = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": key})
        assert listed.status_code == 200
    other = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    with serve("--database", other, cwd=tmp_path) as (lines, _):
        assert lines[0] != f"{KEY_LINE}{key}"  # another database, another key


def test_the_api_key_from_the_environment_stays_out_of_argv(tmp_path: Path) -> None:
    env = {"DEPLOYPLANE_EMULATOR_API_KEY": "env-key"}
    with serve(cwd=tmp_path, env=env) as (lines, url):
        assert lines == [lines[-1]]  # no generated key printed
        ok = httpx.get(f"{url}/v2/deployments", headers={"X-Api-Key": "env-key"})
        assert ok.status_code == 200


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with serve("--api-key", "k", cwd=tmp_path) as (_, url):
        port = url.rsplit(":", 1)[1]
        result = subprocess.run(
            [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", port],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**inherited_env(), "DEPLOYPLANE_EMULATOR_API_KEY": "k"},
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stderr == f"error: cannot listen on 127.0.0.1:{port}: address already in use\n"
    assert result.stdout == ""


def test_the_dev_key_is_kept_in_a_postgresql_database_too(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    env = {"DEPLOYPLANE_DATABASE_URL": postgres_server.fresh_database()}
    with serve(cwd=tmp_path, env=env) as (lines, _):
        first = lines[0]
    with serve(cwd=tmp_path, env=env) as (lines, url):
        assert lines[0] == first
        key = first.removeprefix(KEY_LINE)
        assert httpx.get(f"{url}/v2/listeners", headers={"X-Api-Key": key}).status_code == 200
    assert not (tmp_path / ".deployplane").exists()


def _serve_once(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deployplane.cli", "controlplane", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**inherited_env(), **env},
        timeout=60,
    )


def test_the_builtin_data_plane_needs_the_extension_and_a_cluster(tmp_path: Path) -> None:
    strict = _serve_once("--strict", "--builtin-dataplane", "agents", cwd=tmp_path, env={})
    assert strict.returncode == 2
    assert strict.stderr.strip() == (
        "error: --builtin-dataplane needs the data-plane extension: not --strict"
    )
    # no cluster configuration: the server started, then stops with one line, exit 2
    no_cluster = _serve_once(
        "--builtin-dataplane",
        "agents",
        cwd=tmp_path,
        env={"KUBECONFIG": str(tmp_path / "absent"), "HOME": str(tmp_path)},
    )
    assert no_cluster.returncode == 2, no_cluster.stderr
    assert no_cluster.stderr.strip().splitlines()[-1] == (
        "error: --builtin-dataplane needs a cluster: set KUBECONFIG, or run in a pod"
    )
