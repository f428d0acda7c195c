"""ControlPlaneConnection: how a resource's connection is resolved (connectionRef, the
namespace's `default`, the operator's own, the deprecated Secret), how the API key is
cached, how its Secret is protected from deletion while a connection names it and let
go of once none does, and the connection kind's own pass (one cheap read; never a write
to the control plane)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import kopf
import pytest
from tests.support.fakeexternal import ExternalFns
from tests.support.fakekube import FakeKube

from deployplane.api.client import ControlPlaneClient
from deployplane.controller import handlers
from deployplane.controller.runtime import build_runtime
from deployplane.externals.connections import KEY_TTL, Connection, Connections
from deployplane.externals.controlplaneconnection import ControlPlaneConnectionConnecter
from deployplane.externals.errors import classified
from deployplane.externals.keyprotection import SECRET_PROTECTION
from deployplane.kinds import KINDS
from deployplane.kinds.common import ConnectionKind, ConnectionReference
from deployplane.kinds.controlplaneconnection.spec import ControlPlaneConnectionSpec
from deployplane.kinds.controlplaneconnection.status import ControlPlaneConnectionStatus
from deployplane.kube.finalizers import SecretRead
from deployplane.reconcile.conditions import ConditionType, Reason
from deployplane.reconcile.external import DependencyNotReady, Managed
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule, State

NS = "team-a"
KEY = "lsv2_sk_connection_key_value"
OPERATOR = Connection("http://operator.test", "operator-key", None)


@dataclass
class Kube:
    """Secrets of one namespace; counts the reads and the protection's writes."""

    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    protected: set[str] = field(default_factory=set)
    writes: list[tuple[str, str]] = field(default_factory=list)
    """("protect" | "release", Secret name)."""

    async def read_secret(self, namespace: str, name: str) -> Mapping[str, str] | None:
        assert namespace == NS
        self.reads.append(name)
        return self.secrets.get(name)

    async def read_secret_state(self, namespace: str, name: str) -> SecretRead | None:
        data = await self.read_secret(namespace, name)
        if data is None:
            return None
        return SecretRead(data, (SECRET_PROTECTION,) if name in self.protected else ())

    async def protect_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        assert (namespace, finalizer) == (NS, SECRET_PROTECTION)
        self.writes.append(("protect", name))
        self.protected.add(name)
        return name in self.secrets

    async def release_secret(self, namespace: str, name: str, finalizer: str) -> bool:
        assert (namespace, finalizer) == (NS, SECRET_PROTECTION)
        self.writes.append(("release", name))
        self.protected.discard(name)
        return name in self.secrets


@dataclass
class ControlPlane:
    """Every connection's client talks to this: answers the one cheap read with
    `status`, recording (host, X-Api-Key, X-Tenant-Id, method, path, query)."""

    status: int = 200
    requests: list[tuple[str, ...]] = field(default_factory=list)

    def handler(self, request: httpx.Request) -> httpx.Response:
        h = request.headers
        self.requests.append(
            (
                request.url.host,
                h.get("X-Api-Key", ""),
                h.get("X-Tenant-Id", ""),
                request.method,
                request.url.path,
                str(request.url.query, "ascii"),
            )
        )
        if self.status != 200:
            return httpx.Response(self.status, json={"detail": "Invalid API key"})
        return httpx.Response(200, json={"resources": [], "offset": 0})

    def factory(self, conn: Connection) -> ControlPlaneClient:
        return conn.client(transport=httpx.MockTransport(self.handler), max_retries=0)


def spec(**over: Any) -> ControlPlaneConnectionSpec:
    body = {"url": "http://shared.test", "apiKeySecretRef": {"name": "key", "key": "apiKey"}}
    return ControlPlaneConnectionSpec.model_validate({**body, **over})


@dataclass
class World:
    index: dict[tuple[str, str], list[ControlPlaneConnectionSpec]] = field(default_factory=dict)
    kube: Kube = field(default_factory=lambda: Kube({"key": {"apiKey": KEY}}))
    control_plane: ControlPlane = field(default_factory=ControlPlane)
    now: float = 1000.0

    def connections(self, default: Connection | None = OPERATOR) -> Connections:
        return Connections(
            default,
            self.kube,  # type: ignore[arg-type]
            factory=self.control_plane.factory,
            index=self.index,
            clock=lambda: self.now,
            keeper=self.kube,
        )


def ref(name: str, kind: ConnectionKind | None = None) -> ConnectionReference:
    return ConnectionReference(name=name, kind=kind)


# ------------------------------------------------------------------- resolution


async def test_without_connection_ref_the_namespace_default_comes_before_the_operators() -> None:
    world = World()
    conns = world.connections()
    assert await conns.settings_for(NS, None) == OPERATOR
    world.index[(NS, "default")] = [spec(tenantId="t-1")]
    assert await conns.settings_for(NS, None) == Connection("http://shared.test", KEY, "t-1")
    assert await conns.settings_for("elsewhere", None) == OPERATOR  # per namespace


async def test_connection_ref_names_a_connection_then_falls_back_to_a_secret() -> None:
    world = World()
    world.index[(NS, "cp")] = [spec()]
    world.kube.secrets["legacy"] = {"url": "http://legacy.test", "apiKey": "legacy-key"}
    world.kube.secrets["cp"] = {"url": "http://not-this.test"}
    conns = world.connections()
    assert (await conns.settings_for(NS, ref("cp"))).url == "http://shared.test"
    # kind Secret skips the connection of the same name (and its index)
    assert (await conns.settings_for(NS, ref("cp", ConnectionKind.SECRET))).url == (
        "http://not-this.test"
    )
    # no connection of that name: the deprecated Secret, when kind does not forbid it
    legacy = await conns.settings_for(NS, ref("legacy"))
    assert (legacy.url, legacy.api_key) == ("http://legacy.test", "legacy-key")
    with pytest.raises(DependencyNotReady, match=r"^ControlPlaneConnection legacy not found$"):
        await conns.settings_for(NS, ref("legacy", ConnectionKind.CONTROL_PLANE_CONNECTION))


@pytest.mark.parametrize(
    ("secrets", "message"),
    [
        ({}, "API key Secret key of ControlPlaneConnection cp not found"),
        (
            {"key": {"other": "x"}},
            "API key Secret key of ControlPlaneConnection cp has no key apiKey",
        ),
    ],
)
async def test_a_connection_whose_key_cannot_be_read_is_not_ready(
    secrets: dict[str, dict[str, str]], message: str
) -> None:
    world = World(kube=Kube(secrets))
    world.index[(NS, "cp")] = [spec()]
    with pytest.raises(DependencyNotReady) as info:
        await world.connections().client_for(NS, ref("cp"))
    assert str(info.value) == message
    assert world.control_plane.requests == []


async def test_a_connection_without_key_secret_sends_no_key() -> None:
    world = World()
    world.index[(NS, "cp")] = [spec(apiKeySecretRef=None)]
    assert await world.connections().settings_for(NS, ref("cp")) == Connection(
        "http://shared.test", None, None
    )
    assert world.kube.reads == []


async def test_the_api_key_is_read_once_a_minute_and_rotation_is_picked_up() -> None:
    world = World()
    world.index[(NS, "default")] = [spec()]
    conns = world.connections()
    first = await conns.client_for(NS, None)
    assert await conns.client_for(NS, None) is first  # pooled, and the Secret read once
    assert world.kube.reads == ["key"]
    world.kube.secrets["key"] = {"apiKey": "rotated"}
    world.now += KEY_TTL - 1
    assert await conns.client_for(NS, None) is first
    world.now += 2
    rotated = await conns.client_for(NS, None)
    assert rotated is not first
    assert world.kube.reads == ["key", "key"]
    # a check of the connection reads it afresh whatever the cache says
    await conns.settings_of(NS, "default", spec(), fresh=True)
    assert world.kube.reads == ["key", "key", "key"]
    await conns.aclose()


async def test_a_connection_another_shard_found_ready_has_its_key_read_again() -> None:
    """Sharded, another instance checks the connection: when it turns Ready there, the
    key this instance cached (the refused one) is dropped, not used for a minute more."""
    world = World()
    world.index[(NS, "default")] = [spec()]
    world.index[(NS, "open")] = [ControlPlaneConnectionSpec(url="http://open.test")]
    conns = world.connections()
    refused = await conns.client_for(NS, None)
    world.kube.secrets["key"] = {"apiKey": "fixed"}
    conns.forget_key(NS, "default")
    conns.forget_key(NS, "open")  # no key Secret: nothing to forget
    conns.forget_key(NS, "unknown")  # not in the index: nothing either
    fixed = await conns.client_for(NS, None)
    assert fixed is not refused
    assert world.kube.reads == ["key", "key"]
    await conns.aclose()


def test_the_kopf_index_holds_each_connection_spec_by_namespace_and_name() -> None:
    kind = KINDS["ControlPlaneConnection"]
    body = {"url": "http://shared.test", "tenantId": "t"}
    indexed = handlers.index_spec(
        kind, namespace=NS, name="cp", spec=kopf.Spec(kopf.Body({"spec": body}))
    )
    assert indexed == {
        (NS, "cp"): ControlPlaneConnectionSpec(url="http://shared.test", tenant_id="t")
    }
    assert handlers.index_spec(kind, namespace=NS, name="bad", spec={"tenantId": "t"}) == {}


async def test_the_runtime_reads_connections_from_kopfs_index() -> None:
    from deployplane.controller.config import OperatorConfig

    index = {(NS, "default"): [spec(apiKeySecretRef=None)]}
    runtime = build_runtime(
        OperatorConfig(),
        FakeKube(),  # type: ignore[arg-type]
        indices={KINDS["ControlPlaneConnection"].index_id: index, "other_index": {}},
    )
    assert (await runtime.connections.settings_for(NS, None)).url == "http://shared.test"


# ------------------------------------------------- the API key Secret's protection


async def test_reading_a_key_protects_its_secret_once_and_never_the_deprecated_one() -> None:
    """The first read for use puts the finalizer on (before anything is made with the
    key); later reads see it there and write nothing. A connectionRef Secret
    (deprecated) is not a connection's key: never protected."""
    world = World()
    world.index[(NS, "default")] = [spec()]
    world.kube.secrets["legacy"] = {"url": "http://legacy.test", "apiKey": "k"}
    conns = world.connections()
    await conns.settings_for(NS, None)
    assert world.kube.writes == [("protect", "key")]
    world.now += KEY_TTL + 1
    await conns.settings_for(NS, None)
    await conns.settings_of(NS, "default", spec(), fresh=True)
    assert world.kube.reads == ["key", "key", "key"]
    assert world.kube.writes == [("protect", "key")], "protected already: no write"
    await conns.settings_for(NS, ref("legacy", ConnectionKind.SECRET))
    assert world.kube.writes == [("protect", "key")]


async def test_without_a_keeper_the_key_is_only_read() -> None:
    """`deployplane plan` resolves connections as the operator does, and writes nothing."""
    world = World()
    world.index[(NS, "default")] = [spec()]
    conns = Connections(OPERATOR, world.kube, index=world.index)  # type: ignore[arg-type]
    assert (await conns.settings_for(NS, None)).api_key == KEY
    assert await conns.release_keys(NS, "default", ["key"]) == []
    assert world.kube.writes == []


async def test_a_key_secret_being_deleted_is_read_and_not_protected() -> None:
    """One deleted before any protection (an upgrade) can take no finalizer: it is
    still read while it lasts."""
    kube = FakeKube()
    kube.put_secret(NS, "key", {"apiKey": KEY})
    kube.secrets_deleting.add((NS, "key"))
    conns = Connections(None, kube, index={(NS, "default"): [spec()]}, keeper=kube)  # type: ignore[arg-type]
    assert (await conns.settings_for(NS, None)).api_key == KEY
    assert kube.secret_writes == []


@pytest.mark.parametrize(
    ("others", "released"),
    [
        ({}, ["key"]),
        ({"other": spec()}, []),
        ({"other": spec(apiKeySecretRef={"name": "elsewhere", "key": "k"})}, ["key"]),
    ],
    ids=["no other connection", "another names it", "another names another"],
)
async def test_a_finalized_connection_releases_its_key_unless_another_names_it(
    others: dict[str, ControlPlaneConnectionSpec], released: list[str]
) -> None:
    """Finalized (its users gone first), the connection lets go of its key Secret, and
    of the one its last check read if the spec names another now; a Secret another
    connection of the namespace names stays protected."""
    world = World()
    world.index[(NS, "cp")] = [spec()]
    world.index.update({(NS, name): [other] for name, other in others.items()})
    world.index[("team-b", "far")] = [spec()]  # another namespace's Secret of that name
    world.kube.protected.add("key")
    connecter = ControlPlaneConnectionConnecter(world.connections())
    await connecter.release(managed(spec()))
    assert world.kube.writes == [("release", name) for name in released]
    assert ("key" in world.kube.protected) is not bool(released)
    world.kube.writes.clear()
    moved = spec(apiKeySecretRef={"name": "new", "key": "apiKey"})
    await connecter.release(managed(moved, ControlPlaneConnectionStatus(protected_secret="key")))
    assert sorted(world.kube.writes) == sorted(("release", n) for n in ["new", *released])


async def test_a_connection_moved_to_another_secret_releases_the_one_it_checked() -> None:
    """Its status says which Secret its last check read (so a change made while no
    operator ran is seen too): when the spec names another, that one is released, the
    new one protected and recorded."""
    world = World()
    world.kube.secrets["new"] = {"apiKey": KEY}
    world.kube.protected.add("key")
    moved = spec(apiKeySecretRef={"name": "new", "key": "apiKey"})
    world.index[(NS, "cp")] = [moved]
    before = ControlPlaneConnectionStatus(url="http://shared.test", protected_secret="key")
    outcome = await reconciler(world).reconcile(managed(moved, before), writes=ExternalFns())
    assert outcome.state is State.READY
    assert outcome.status.protected_secret == "new"
    assert world.kube.writes == [("release", "key"), ("protect", "new")]
    # checked again: nothing more to write
    world.kube.writes.clear()
    await reconciler(world).reconcile(managed(moved, outcome.status), writes=ExternalFns())
    assert world.kube.writes == []


# ------------------------------------------------------------ the connection's pass


def managed(
    body: ControlPlaneConnectionSpec, status: ControlPlaneConnectionStatus | None = None
) -> Managed[ControlPlaneConnectionSpec, ControlPlaneConnectionStatus]:
    return Managed(NS, "cp", "uid-1", 1, body, status or ControlPlaneConnectionStatus())


def reconciler(world: World) -> Reconciler[Any, Any]:
    connecter = classified(ControlPlaneConnectionConnecter(world.connections()))
    return Reconciler(connecter, kind="connection", schedule=Schedule())


def condition(status: ControlPlaneConnectionStatus, kind: ConditionType) -> tuple[str, str]:
    found = next(c for c in status.conditions if c.type == kind)
    return found.status, found.reason


async def test_a_good_connection_is_ready_after_one_read_and_writes_nothing() -> None:
    world = World()
    writes = ExternalFns()
    outcome = await reconciler(world).reconcile(
        managed(spec(tenantId="t-1")),
        writes=writes,
    )
    assert outcome.state is State.READY
    assert condition(outcome.status, ConditionType.READY) == ("True", Reason.AVAILABLE)
    assert outcome.status.url == "http://shared.test"
    assert world.control_plane.requests == [
        ("shared.test", KEY, "t-1", "GET", "/v2/deployments", "limit=1")
    ]
    assert writes.journal == []  # no create-pending marker: nothing is ever created
    assert [(e.reason, e.message) for e in outcome.events] == [
        ("Observing", "Observing connection http://shared.test (ObserveOnly)"),
        (
            "Available",
            "The control plane at http://shared.test accepted the connection (tenant t-1)",
        ),
    ]
    # and deleting it deletes nothing, asks nothing
    assert await reconciler(world).finalize(managed(spec())) is True
    assert len(world.control_plane.requests) == 1


@pytest.mark.parametrize(("code", "reason"), [(401, "Unauthorized"), (403, "Forbidden")])
async def test_a_refused_key_stalls_is_rechecked_soon_and_never_shown(
    code: int, reason: str
) -> None:
    world = World(control_plane=ControlPlane(status=code))
    outcome = await reconciler(world).reconcile(managed(spec()), writes=ExternalFns())
    # Stalled (the user must act) and Ready=False, but checked again in 30 s, not at
    # the resync: the fix is a new key in the Secret, which nothing announces.
    assert (outcome.state, outcome.recheck_after) == (State.STALLED, 30.0)
    assert condition(outcome.status, ConditionType.READY) == ("False", reason)
    assert condition(outcome.status, ConditionType.SYNCED) == ("False", reason)
    assert condition(outcome.status, ConditionType.STALLED) == ("True", reason)
    text = outcome.status.model_dump_json()
    assert KEY not in text
    assert "Invalid API key" in text


async def test_a_changed_url_is_checked_and_recorded() -> None:
    world = World()
    old = ControlPlaneConnectionStatus(url="http://old.test")
    outcome = await reconciler(world).reconcile(
        managed(spec(url="http://new.test"), old),
        writes=ExternalFns(),
    )
    assert outcome.status.url == "http://new.test"
    assert [r[0] for r in world.control_plane.requests] == ["new.test"]


@pytest.mark.parametrize(
    ("name", "spec", "uses"),
    [
        ("default", {}, True),
        ("cp", {}, False),
        ("cp", {"connectionRef": {"name": "cp"}}, True),
        ("cp", {"connectionRef": {"name": "cp", "kind": "ControlPlaneConnection"}}, True),
        ("cp", {"connectionRef": {"name": "cp", "kind": "Secret"}}, False),
        ("default", {"connectionRef": {"name": "cp"}}, False),
    ],
)
def test_which_resources_use_a_connection(name: str, spec: dict[str, Any], uses: bool) -> None:
    """As the resolution above: what holds a connection's deletion back."""
    used_by = KINDS["ControlPlaneConnection"].used_by
    assert used_by is not None
    connection = {"metadata": {"namespace": NS, "name": name}}
    assert used_by(connection, {"metadata": {"namespace": NS}, "spec": spec}) is uses
    elsewhere = {"metadata": {"namespace": "team-b"}, "spec": spec}
    assert not used_by(connection, elsewhere), "only resources of its own namespace"
