"""The kind registry: one `KindDef` per kind feeds the CRD generator, the Kopf handlers and
the runtime, so another kind needs its own definition and one binding to its external
client, nothing else; and the handlers take a deleted resource out of the per-resource
gauges."""

from __future__ import annotations

import asyncio
import copy
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from pydantic import Field
from tests.support import chart, kopfregistrations
from tests.support.fakeexternal import ConnecterFns, ExternalFns, FakeSpec, returns
from tests.support.fakeexternal import FakeStatus as CoreFakeStatus
from tests.support.fakekube import FakeKube

from deployplane.controller import handlers
from deployplane.controller.config import OperatorConfig
from deployplane.controller.runtime import Runtime, build_runtime
from deployplane.crd.cel import immutable
from deployplane.crd.columns import column, printer_columns
from deployplane.crdgen import schema
from deployplane.externals.bindings import BINDINGS, CONNECTERS, Bindings, Unbound
from deployplane.kinds import KINDS, KindDef, KindRegistry, discover
from deployplane.kube.paths import GROUP
from deployplane.reconcile.finalizer import DELETE_POLL_SECONDS, FINALIZER
from deployplane.reconcile.schedule import Result

NS = "team-a"


class FakeStatus(CoreFakeStatus):
    """What the operator knows of a fake (the generic core's statuses derive from
    ResourceStatus: the fake external's id field, conditions, observedGeneration)."""

    fake_id: str | None = Field(default=None, alias="fakeId", description="Id of the fake.")


def fake_kind(**names: Any) -> KindDef[FakeSpec]:
    return KindDef(
        kind=names.pop("kind", "Fake"),
        plural=names.pop("plural", "fakes"),
        short_names=names.pop("short_names", ("fk",)),
        description="A kind that exists only in this test.",
        spec_model=FakeSpec,
        status_model=FakeStatus,
        noun="fake",
        rules={"deletionPolicy": [immutable("deletionPolicy")]},
        printer_columns=printer_columns(column("Fake ID", ".status.fakeId", "Id of the fake.")),
        **names,
    )


def fake_bindings(ext: ExternalFns | None = None) -> Bindings:
    """The operator's bindings, and the fake kind's external client."""
    connecter = ConnecterFns(ext or ExternalFns())
    return BINDINGS.with_connecter("Fake", lambda connections, kube: connecter)


# ---------------------------------------------------------------------- registry


def test_the_operator_serves_the_three_kinds_each_named_once() -> None:
    assert [(k.kind, k.plural, k.singular, k.noun, k.indexed) for k in KINDS] == [
        ("AgentDeployment", "agentdeployments", "agentdeployment", "deployment", False),
        (
            "ControlPlaneConnection",
            "controlplaneconnections",
            "controlplaneconnection",
            "connection",
            True,
        ),
        ("Listener", "listeners", "listener", "listener", False),
    ]
    assert KINDS["Listener"].crd_name == "listeners.deployplane.io"


@pytest.mark.parametrize(
    "clash",
    [{"kind": "Listener"}, {"plural": "listeners"}, {"short_names": ("agd",)}],
)
def test_a_kind_whose_names_are_taken_is_refused(clash: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="is taken by"):
        KINDS.with_kinds(fake_kind(**clash))


def test_every_kind_is_bound_to_an_external_client() -> None:
    assert sorted(CONNECTERS) == sorted(kind.kind for kind in KINDS)


def test_a_kind_bound_to_no_external_client_is_named() -> None:
    with pytest.raises(Unbound, match=r"^kind Fake has no external client: bind one in "):
        BINDINGS.connecter(fake_kind(), None, None)  # type: ignore[arg-type]


def test_discovery_finds_every_kind_folder_of_a_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "morekinds"
    (package / "widget").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "shared.py").write_text("X = 1\n")  # what the kinds share: no kind
    (package / "widget" / "__init__.py").write_text(
        textwrap.dedent(
            """
            from tests.support.fakeexternal import FakeSpec

            from deployplane.kinds import KindDef

            KIND = KindDef(
                kind="Widget",
                plural="widgets",
                short_names=("wdg",),
                description="A widget.",
                spec_model=FakeSpec,
                status_model=FakeSpec,
                noun="widget",
            )
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert [k.kind for k in discover("morekinds")] == ["Widget"]
        (package / "broken").mkdir()
        (package / "broken" / "__init__.py").write_text("X = 1\n")
        with pytest.raises(TypeError, match=r"morekinds\.broken defines no KIND"):
            discover("morekinds")
    finally:
        for name in [m for m in sys.modules if m.startswith("morekinds")]:
            del sys.modules[name]


def test_the_registry_and_the_crd_generator_load_no_external_client() -> None:
    """The kinds import no external client (their bindings do): generating CRDs needs
    no HTTP client, Kopf or externals package (and so cannot be broken by one)."""
    code = (
        "import sys, deployplane.crdgen.schema; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'kopf') "
        "or m.startswith('deployplane.externals')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------ another kind, end to end


def test_another_kind_is_picked_up_by_the_crd_generator() -> None:
    kinds = KINDS.with_kinds(fake_kind())
    files = schema.rendered_files(kinds)
    assert sorted(files) == sorted(
        f"{d}/{n}.deployplane.io.yaml"
        for d in ("crds", "charts/deployplane/crds")
        for n in ("agentdeployments", "controlplaneconnections", "fakes", "listeners")
    )
    crd = yaml.safe_load(files["crds/fakes.deployplane.io.yaml"])
    assert crd["metadata"]["name"] == "fakes.deployplane.io"
    assert crd["spec"]["names"] == {
        "kind": "Fake",
        "listKind": "FakeList",
        "plural": "fakes",
        "singular": "fake",
        "shortNames": ["fk"],
        "categories": ["deployplane"],
    }
    (version,) = crd["spec"]["versions"]
    root = version["schema"]["openAPIV3Schema"]
    assert root["description"] == "A kind that exists only in this test."
    policy = root["properties"]["spec"]["properties"]["deletionPolicy"]
    assert policy["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "spec.deletionPolicy is immutable"}
    ]
    assert "fakeId" in root["properties"]["status"]["properties"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Ready",
        "Synced",
        "Fake ID",
        "Age",
    ]
    # The operator's own registry is untouched: the CRDs it ships are still three.
    assert len(schema.custom_resource_definitions()) == 3


def test_another_kind_is_in_the_generated_kustomization_and_operator_rbac() -> None:
    files = schema.generated_files(KINDS.with_kinds(fake_kind()))
    base = yaml.safe_load(files["crds/kustomization.yaml"])
    assert base["resources"] == [
        "agentdeployments.deployplane.io.yaml",
        "controlplaneconnections.deployplane.io.yaml",
        "listeners.deployplane.io.yaml",
        "fakes.deployplane.io.yaml",
    ]
    role = next(
        doc
        for doc in yaml.safe_load_all(files["manifests/rbac.yaml"])
        if doc["kind"] == "ClusterRole"
    )
    granted = [rule["resources"] for rule in role["rules"] if rule["apiGroups"] == [GROUP]]
    mine = ("agentdeployments", "controlplaneconnections", "listeners", "fakes")
    assert granted == [
        list(mine),
        [f"{p}/status" for p in mine],
        [f"{p}/finalizers" for p in mine],
    ]
    # What the operator ships lists its three kinds, and is committed as generated.
    assert schema.main(["--check"]) == 0


async def test_another_kind_gets_a_kopf_event_handler_and_a_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kopf watches every kind of the registry; its events go to the workers."""
    kinds = KINDS.with_kinds(fake_kind())
    runtime = build_runtime(
        OperatorConfig(),
        FakeKube(),  # type: ignore[arg-type]
        kinds,
        bindings=fake_bindings(),
    )
    assert list(runtime.workers.runners) == [
        "AgentDeployment",
        "ControlPlaneConnection",
        "Listener",
        "Fake",
    ]
    loop = runtime.workers.runners["Fake"]
    assert (loop.plural, loop.spec_model, loop.reconciler.kind) == ("fakes", FakeSpec, "fake")
    with kopfregistrations.recorded(monkeypatch) as seen:
        handlers.register(kinds)
    watched = [r for r in seen if r.decorator == "event"]
    assert [h.id for h in watched] == [
        "watch-agentdeployments",
        "watch-controlplaneconnections",
        "watch-listeners",
        "watch-fakes",
    ]
    # Only the indexed kind (the connections) gets a Kopf index.
    assert [r.id for r in seen if r.decorator == "index"] == ["controlplaneconnections_index"]
    fake = next(h for h in watched if h.id == "watch-fakes")
    assert fake.resource == (GROUP, "v1alpha1", "fakes")
    body = {"metadata": {"namespace": "ns-1", "name": "f1", "uid": "u1"}, "spec": {}}
    await fake.fn(event={"type": None, "object": body}, memo=kopf.Memo(runtime=runtime))
    assert ("Fake", "ns-1", "f1", "u1") in runtime.workers.resources, "fed to the workers"


def test_another_kind_is_granted_by_the_charts_rbac_from_its_crd_file(tmp_path: Path) -> None:
    copy = tmp_path / "deployplane"
    shutil.copytree(chart.CHART, copy)
    for relative, text in schema.rendered_files(KINDS.with_kinds(fake_kind())).items():
        if relative.startswith("charts/deployplane/crds/"):
            (copy / "crds" / Path(relative).name).write_text(text)
    out = subprocess.run(
        [str(chart.helm_binary()), "template", "x", str(copy)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    role = chart.find(chart.parse_documents(out), "ClusterRole")
    rules = [r for r in role["rules"] if r["apiGroups"] == ["deployplane.io"]]
    (kinds_rule, status_rule, finalizers_rule) = rules
    mine = ("agentdeployments", "controlplaneconnections", "fakes", "listeners")
    assert kinds_rule["resources"] == list(mine)
    assert status_rule["resources"] == [f"{p}/status" for p in mine]
    assert finalizers_rule["resources"] == [f"{p}/finalizers" for p in mine]


def test_kopf_has_event_handlers_only_so_it_never_touches_an_object() -> None:
    """Kopf watches and hands every event over; the workers reconcile and finalize. With
    no on.create/update/delete handler and no daemon, Kopf puts no finalizer of its own
    on any object, writes no annotation (no diff-base, no progress). Seen through Kopf's
    public decorators, as the operator's module registers on import."""
    registered = kopfregistrations.registered_on_import("deployplane.controller.handlers")
    assert sorted(registered, key=str) == sorted(
        [
            ("event", "watch-agentdeployments"),
            ("event", "watch-controlplaneconnections"),
            ("event", "watch-listeners"),
            ("index", "controlplaneconnections_index"),
            ("login", None),
            ("startup", None),
            ("probe", "alive"),
            ("probe", "scope"),
            ("cleanup", None),
        ],
        key=str,
    )


# --------------------------------------------------------- deleted resources leave gauges


def rig(ext: ExternalFns) -> tuple[Runtime, FakeKube, dict[str, Any]]:
    kube = FakeKube()
    runtime = build_runtime(
        OperatorConfig(),
        kube,  # type: ignore[arg-type]
        KindRegistry([fake_kind()]),
        bindings=fake_bindings(ext),
    )
    body = {"metadata": {"namespace": NS, "name": "f1", "uid": "u1", "generation": 1}, "spec": {}}
    return runtime, kube, body


KEY = ("Fake", NS, "f1", "u1")


def tracked(runtime: Runtime) -> dict[str, float]:
    """The gauges that hold one resource: how many each counts for the fake kind."""
    registry = runtime.metrics.registry
    counts = {
        f"{s.labels['condition']}={s.labels['status']}": s.value
        for family in registry.collect()
        if family.name == "deployplane_resources"
        for s in family.samples
        if s.labels["kind"] == "Fake" and s.value
    }
    not_ready = registry.get_sample_value("deployplane_resources_not_ready", {"kind": "Fake"})
    since = registry.get_sample_value(
        "deployplane_resources_not_ready_since_timestamp_seconds", {"kind": "Fake"}
    )
    return {**counts, "not_ready": not_ready or 0.0, "since_set": float(since is not None)}


async def settled(runtime: Runtime) -> None:
    """Let the Events recorded land (the recorder posts them in the background)."""
    runtime.events.start()
    for _ in range(10):
        await asyncio.sleep(0)
    await runtime.events.stop()


async def test_a_finished_deletion_takes_the_resource_out_of_the_gauges() -> None:
    ext = ExternalFns(delete_fn=returns(False, True))
    runtime, kube, body = rig(ext)
    workers = runtime.workers
    # One pass (the fake is created, not Ready yet, our finalizer put on).
    workers.observe("Fake", "ADDED", body)
    await workers.run_pass(KEY)
    await settled(runtime)
    assert ("create",) in ext.journal
    assert ("f1", "Normal", "Created") in kube.events
    counted = tracked(runtime)
    assert counted["not_ready"] == 1
    assert counted["since_set"] == 1
    assert counted["Ready=False"] == 1

    deleting = copy.deepcopy(body)
    deleting["metadata"].update(deletionTimestamp="now", finalizers=[FINALIZER])
    workers.observe("Fake", "MODIFIED", deleting)
    # The control plane is still deleting: looked at again soon, finalizer kept.
    assert await workers.run_pass(KEY) == Result(DELETE_POLL_SECONDS)
    assert tracked(runtime) == counted

    assert await workers.run_pass(KEY) == Result()
    assert ("delete", "dep-new") in ext.journal
    assert tracked(runtime) == {"not_ready": 0.0, "since_set": 0.0}
    assert kube.finalizers_removed == [("fakes", NS, "f1", FINALIZER)]


async def test_a_resource_deleted_from_the_watch_takes_itself_out_of_the_gauges() -> None:
    runtime, kube, body = rig(ExternalFns())
    workers = runtime.workers
    workers.observe("Fake", "ADDED", body)
    await workers.run_pass(KEY)
    await settled(runtime)
    assert (
        "f1",
        "Normal",
        "Created",
    ) in kube.events  # it made its pass, counted in the gauges until deleted
    assert tracked(runtime)["not_ready"] == 1
    workers.observe("Fake", "DELETED", body)
    assert tracked(runtime) == {"not_ready": 0.0, "since_set": 0.0}
    assert KEY not in workers.resources
