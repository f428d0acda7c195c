"""A throwaway PostgreSQL server for tests: initdb into a temporary directory, listen on
127.0.0.1 on a free port, an emptied database for each test, removed at the end.

Only the server binaries are needed (`make postgres` installs them when missing; see
tools/postgres.sh for where they are looked for). PostgreSQL refuses to run as root,
so under root (CI) the server runs as the `postgres` system user, created if missing.
Durability is off (fsync, synchronous_commit, full_page_writes): a test database
never outlives a crash, and a fast fsync-free server keeps the tests quick.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PostgresServer", "find_bin", "missing_reason"]

SERVER_USER = "postgres"


def find_bin() -> Path | None:
    """The directory with initdb and pg_ctl: the same search as tools/postgres.sh."""

    def usable(directory: Path) -> bool:
        return all(os.access(directory / tool, os.X_OK) for tool in ("initdb", "pg_ctl"))

    if explicit := os.environ.get("DEPLOYPLANE_PG_BIN"):
        return Path(explicit) if usable(Path(explicit)) else None

    def version(directory: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in directory.parent.name.split(".") if part.isdigit())

    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for directory in debian:
        if usable(directory):
            return directory
    on_path = shutil.which("initdb")
    if on_path is not None:
        directory = Path(on_path).resolve().parent
        if usable(directory):
            return directory
    return None


def missing_reason() -> str | None:
    """Why no server can be started here, or None when one can."""
    if find_bin() is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl) not found: run `make postgres` "
            "(apt-get install postgresql) or set DEPLOYPLANE_PG_BIN to their directory"
        )
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        return "asyncpg is not installed: run `make venv` (the test extra installs it)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without `runuser`: PostgreSQL refuses to run as root"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_account() -> pwd.struct_passwd | None:
    """The account the server runs as when we are root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


@dataclass
class PostgresServer:
    bindir: Path
    root: Path
    port: int
    password: str
    account: pwd.struct_passwd | None
    _database_created: bool = False

    host = "127.0.0.1"
    database = "deployplane_test"
    user = "postgres"  # the superuser initdb creates (-U), whatever account runs it

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    @classmethod
    def start(cls, bindir: Path) -> PostgresServer:
        account = _server_account()
        # mkdtemp, not pytest's tmp_path: the server account must be able to reach it, and
        # pytest's base directory is private to the user running the tests.
        root = Path(tempfile.mkdtemp(prefix="deployplane-pg-"))
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
        server = cls(bindir, root, 0, secrets.token_urlsafe(18), account)
        try:
            server._initdb()
            for _ in range(3):  # a free port can be taken before the server binds it
                server.port = _free_port()
                if server._pg_ctl_start():
                    return server
            raise RuntimeError(f"PostgreSQL did not start:\n{server._log_tail()}")
        except BaseException:
            server.stop()
            raise

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.account is not None:
            command = ["runuser", "-u", self.account.pw_name, "--", *command]
        return subprocess.run(
            command, capture_output=True, text=True, check=check, cwd=self.root, timeout=120
        )

    def _initdb(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        if self.account is not None:
            os.chown(pwfile, self.account.pw_uid, self.account.pw_gid)
        try:
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                self.user,
                f"--pwfile={pwfile}",
                # TCP clients prove the password (what a real deployment does); the
                # socket in the private directory is trusted.
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"initdb failed: {exc.stderr.strip()}") from None
        finally:
            pwfile.unlink(missing_ok=True)

    def _pg_ctl_start(self) -> bool:
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                f"-c unix_socket_directories={self.root}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
            ]
        )
        started = self._run(
            "pg_ctl", "start", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
            "-o", options, check=False,
        )  # fmt: skip
        return started.returncode == 0

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no server log)"

    def url(self, database: str, *, driver: str = "postgresql+asyncpg") -> str:
        return f"{driver}://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def _admin(self, *statements: str, database: str = "postgres") -> None:
        import asyncpg

        async def run() -> None:
            conn = await asyncpg.connect(
                host=str(self.root), port=self.port, user=self.user, database=database
            )
            try:
                for statement in statements:
                    await conn.execute(statement)
            finally:
                await conn.close()

        # Its own thread and event loop: callers may be sync fixtures or async tests.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, run()).result(timeout=60)

    def fresh_database(self) -> str:
        """The URL of an empty database (the same one each call, emptied).

        Emptying the public schema takes milliseconds where CREATE DATABASE takes
        100-200 ms, which over the tests that run on PostgreSQL adds up to seconds.
        """
        if not self._database_created:
            self._admin(f'CREATE DATABASE "{self.database}"')
            self._database_created = True
        self._admin(
            # Whatever a failed test left connected (and locked) goes first.
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()",
            "DROP SCHEMA public CASCADE",
            "CREATE SCHEMA public",
            database=self.database,
        )
        return self.url(self.database)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w", check=False)
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)
