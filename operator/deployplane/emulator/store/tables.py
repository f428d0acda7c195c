"""The emulator's tables, their column types and the schema upgrade of older databases.

SQLAlchemy Core tables rather than ORM classes: every request is one or two small
statements, and skipping the identity map and unit of work keeps the request path
short (see bench/controlplane.py). The database handle is `db.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    false,
    inspect,
    text,
)
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

__all__ = [
    "add_missing_columns",
    "add_missing_indexes",
    "builtin_agents",
    "dataplane_revisions",
    "deployments",
    "emulator_keys",
    "listener_agents",
    "listeners",
    "metadata",
    "revision_logs",
    "revisions",
    "secret_values",
    "text_position",
    "tracing_projects",
    "uploads",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC without a zone (SQLite has none) and reads it back zone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


class text_position(FunctionElement[int]):  # lower case: used like a SQL function
    """`text_position(column, needle)`: where the needle first occurs in the column, from
    1; 0 if nowhere. Compared literally and with case: `text_position(c, x) > 0` is the
    substring test LIKE is not (SQLite's LIKE ignores ASCII case and PostgreSQL's does
    not, so one query answered differently on the two; and LIKE needs its wildcards
    escaped)."""

    type = Integer()
    name = "text_position"
    inherit_cache = True


@compiles(text_position)
def _text_position(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    column, needle = element.clauses
    return f"strpos({compiler.process(column, **kw)}, {compiler.process(needle, **kw)})"


@compiles(text_position, "sqlite")
def _text_position_sqlite(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    column, needle = element.clauses
    return f"instr({compiler.process(column, **kw)}, {compiler.process(needle, **kw)})"


metadata = MetaData()


def _owned_by_workspace() -> tuple[Column[Any], Column[Any]]:
    """The id of a workspace's resource and the workspace every query is scoped by."""
    return Column("id", Uuid, primary_key=True), Column("workspace_id", Uuid, nullable=False)


def _timestamps() -> tuple[Column[Any], Column[Any]]:
    """created_at and updated_at of a resource the API answers with both."""
    return (
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    )


deployments = Table(
    "deployments",
    metadata,
    *_owned_by_workspace(),
    Column("name", String, nullable=False),
    Column("source", String, nullable=False),
    Column("source_config", JSON, nullable=False),
    # [{"name": ..., "digest": hmac(value)}]: values are never stored, only enough to
    # tell whether a PATCH changed them.
    Column("secrets", JSON, nullable=False),
    # [{"name", "secret_name", "secret_key"}] or null: references, never values
    Column("secret_references", JSON, nullable=True),
    Column("status", String, nullable=False),
    Column("latest_revision_id", Uuid, nullable=True),
    Column("active_revision_id", Uuid, nullable=True),
    Column("image_version", String, nullable=True),
    *_timestamps(),
    # epoch seconds at which an AWAITING_DELETE deployment is removed
    Column("delete_at", Float, nullable=True),
    # the DELETE's delete_tracing_project: whether the tracing project goes too
    Column("delete_tracing_project", Boolean, nullable=False, server_default=false()),
    # The agent and environment of a deployment created for one (the vendor CLI's agent
    # mode); both null for a deployment created by name.
    Column("agent_id", String, nullable=True),
    Column("agent_environment", String, nullable=True),
    # The unique constraint, not a lookup before the insert, is what makes concurrent
    # creates of one name answer exactly one success and 400 for the rest.
    UniqueConstraint("workspace_id", "name", name="uq_deployment_workspace_name"),
    Index("ix_deployments_delete_at", "delete_at"),
    # One deployment per agent and environment in a workspace, decided the same way (a
    # 409 for the rest). An index, not a constraint: an older database gains it
    # (`add_missing_indexes`), and rows by name (nulls) never collide, on SQLite and
    # PostgreSQL alike.
    Index(
        "uq_deployment_workspace_agent",
        "workspace_id",
        "agent_id",
        "agent_environment",
        unique=True,
    ),
)

tracing_projects = Table(
    "tracing_projects",
    metadata,
    *_owned_by_workspace(),
    Column("name", String, nullable=False),
    Column("deployment_id", Uuid, ForeignKey("deployments.id", ondelete="CASCADE"), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "name", name="uq_tracing_project_workspace_name"),
)

revisions = Table(
    "revisions",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column(
        "deployment_id",
        Uuid,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("seq", Integer, nullable=False),
    Column("source", String, nullable=False),
    Column("status", String, nullable=False),
    Column("repo_ref", String, nullable=True),
    Column("graph_config_path", String, nullable=True),
    Column("image_uri", String, nullable=True),
    Column("repo_commit_sha", String, nullable=True),
    # internal_source (the vendor CLI's remote build): the upload and its config file
    Column("source_tarball_path", String, nullable=True),
    Column("langgraph_config_path", String, nullable=True),
    # why its build failed (set with BUILDING, read on leaving it); null if it did not
    Column("build_error", String, nullable=True),
    *_timestamps(),
    # epoch seconds at which the pipeline moves this revision on; null once terminal
    Column("next_step_at", Float, nullable=True),
    # The service's "applied by the data plane": false when created; see
    # `store.remote_reconciled_condition` for how deployments are filtered by it.
    Column("remote_reconciled", Boolean, nullable=False, server_default=false()),
    UniqueConstraint("deployment_id", "seq", name="uq_revision_deployment_seq"),
    Index("ix_revisions_next_step_at", "next_step_at"),
)

listeners = Table(
    "listeners",
    metadata,
    *_owned_by_workspace(),
    Column("compute_type", String, nullable=False),
    Column("compute_id", String, nullable=False),
    Column("compute_config", JSON, nullable=True),
    Column("version", String, nullable=True),
    *_timestamps(),
    UniqueConstraint("workspace_id", "compute_id", name="uq_listener_workspace_compute_id"),
)

# The data-plane extension (docs/dataplane.md). Tables of their own, not columns: an
# existing database gains them from create_all, which never alters a table.
listener_agents = Table(
    "listener_agents",
    metadata,
    Column("listener_id", Uuid, ForeignKey("listeners.id", ondelete="CASCADE"), primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    # epoch seconds of the agent's last heartbeat; alive while within AGENT_TTL_SECONDS
    Column("seen_at", Float, nullable=False),
)

# The emulator's built-in data plane (`serve --builtin-dataplane`): one agent per
# workspace, standing for a listener no listing shows (`agents.builtin_listener_id`),
# which runs the deployments that have no listener. Its heartbeats, as above.
builtin_agents = Table(
    "builtin_agents",
    metadata,
    Column("listener_id", Uuid, primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    Column("seen_at", Float, nullable=False),
)

# A row = the revision's deploy stages belong to the listener's agent, not the timers.
dataplane_revisions = Table(
    "dataplane_revisions",
    metadata,
    Column("revision_id", Uuid, ForeignKey("revisions.id", ondelete="CASCADE"), primary_key=True),
    Column("deployment_id", Uuid, nullable=False),
    Column("listener_id", Uuid, nullable=False),
    # the agent's last word on the rollout, e.g. why it failed (never secret values)
    Column("message", String, nullable=True),
    Column("reported_at", UTCDateTime, nullable=True),
    Index("ix_dataplane_revisions_deployment", "deployment_id"),
)

# The values of a deployment's secrets, for the listener agent that must put them in
# the cluster (the published API returns names only, and `deployments.secrets` keeps
# digests). Only read by the data-plane extension; never logged or returned elsewhere.
secret_values = Table(
    "secret_values",
    metadata,
    Column(
        "deployment_id",
        Uuid,
        ForeignKey("deployments.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("values", JSON, nullable=False),
)


# Source tarballs PUT to the signed upload URLs (emulator/uploads.py): a row is
# made by POST upload-url (the URL's one use still open: `data` null) and filled by the
# PUT; a PATCH's source_tarball_path must name a filled one of the same deployment.
uploads = Table(
    "uploads",
    metadata,
    Column("object_path", String, primary_key=True),
    Column("workspace_id", Uuid, nullable=False),
    Column("deployment_id", Uuid, ForeignKey("deployments.id", ondelete="CASCADE"), nullable=False),
    Column("expires_at", Float, nullable=False),  # epoch seconds
    Column("used", Boolean, nullable=False, server_default=false()),
    Column("data", LargeBinary, nullable=True),
    Column("size", BigInteger, nullable=True),
    Column("digest", String, nullable=True),  # sha256 hex of the tarball
    Index("ix_uploads_deployment", "deployment_id"),
)

# Build and deploy log lines of revisions (emulator/buildlogs.py), in the order
# written (`seq`, which the logs' offsets count in).
revision_logs = Table(
    "revision_logs",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("deployment_id", Uuid, ForeignKey("deployments.id", ondelete="CASCADE"), nullable=False),
    Column("revision_id", Uuid, nullable=False),
    Column("kind", String, nullable=False),  # build | deploy
    Column("at_ms", BigInteger, nullable=False),
    Column("level", String, nullable=False),
    Column("message", String, nullable=False),
    Index("ix_revision_logs_revision", "revision_id", "kind"),
    Index("ix_revision_logs_deployment", "deployment_id", "kind"),
)


# Server-side keys that must not live in the rows they protect (PostgreSQL only; see
# `Database.load_secret_key`).
emulator_keys = Table(
    "emulator_keys",
    metadata,
    Column("name", String, primary_key=True),
    Column("value", String, nullable=False),
)


def add_missing_columns(conn: Connection) -> None:
    """Columns added since a database was made (create_all creates only whole tables):
    each added with its server default, so a database of an earlier version keeps
    working, its rows intact."""
    inspector = inspect(conn)
    for table in metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            ddl = f"ALTER TABLE {table.name} ADD COLUMN {column.name} "
            ddl += column.type.compile(dialect=conn.dialect)
            if column.server_default is not None:
                default = column.server_default.arg  # type: ignore[attr-defined]
                ddl += f" DEFAULT {default.compile(dialect=conn.dialect)}"
            if not column.nullable:
                ddl += " NOT NULL"
            conn.execute(text(ddl))


def add_missing_indexes(conn: Connection) -> None:
    """Indexes added since a database was made (create_all creates them only with their
    table), after `add_missing_columns` has added the columns they cover."""
    inspector = inspect(conn)
    for table in metadata.sorted_tables:
        present = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in present:
                index.create(conn)
