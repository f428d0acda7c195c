"""spec.writeOutputsTo inside a pass (PassRunner._outputs): no request for a resource
without it, the ConfigMap written with the pass that changes the values and then left
alone, and a ConfigMap that is not ours turned into Synced=False (one Warning Event).
No Kubernetes: the ConfigMap port is a dict."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from tests.support.fakeexternal import ConnecterFns, ExternalFns, FakeSpec, FakeStatus

from deployplane.reconcile import conditions
from deployplane.reconcile.outcome import EventRecord
from deployplane.reconcile.outputs import (
    CONFIG_MAP_NOT_OWNED,
    CONFIG_MAP_WRITE_FAILED,
    ConfigMapError,
)
from deployplane.reconcile.passes import PassRunner
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.resourcestate import ResourceState
from deployplane.reconcile.schedule import Schedule

NS = "team-a"


class ExportingStatus(FakeStatus):
    """A kind whose status exports its id and latest revision."""

    def outputs(self) -> dict[str, str]:
        return {
            "deploymentId": self.deployment_id or "",
            "latestRevisionId": self.latest_revision_id or "",
        }


@dataclass
class ConfigMaps:
    maps: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", name))
        return copy.deepcopy(self.maps.get(name))

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.calls.append(("create", body["metadata"]["name"]))
        self.maps[body["metadata"]["name"]] = copy.deepcopy(dict(body))

    async def patch_config_map_data(
        self, namespace: str, name: str, data: Mapping[str, str], resource_version: str | None
    ) -> None:
        self.calls.append(("patch", name))
        self.maps[name]["data"] = dict(data)


@dataclass
class StatusSink:
    writes: list[dict[str, Any]] = field(default_factory=list)

    async def patch_status(self, plural: str, namespace: str, name: str, patch: Any) -> bool:
        self.writes.append(copy.deepcopy(dict(patch)))
        return True

    async def patch_object(self, *args: Any, **kwargs: Any) -> bool:
        return True


@dataclass
class Rig:
    ext: ExternalFns = field(default_factory=ExternalFns)
    config_maps: ConfigMaps = field(default_factory=ConfigMaps)
    sink: StatusSink = field(default_factory=StatusSink)
    events: list[EventRecord] = field(default_factory=list)

    def runner(self) -> PassRunner[Any, Any]:
        reconciler = Reconciler(ConnecterFns(self.ext), kind="deployment", schedule=Schedule())
        return PassRunner(
            cast(Reconciler[Any, Any], reconciler),
            FakeSpec,
            "agentdeployments",
            self.sink,
            status_model=ExportingStatus,
            config_maps=self.config_maps,
        )

    async def passes(
        self, n: int, spec: dict[str, Any], state: ResourceState | None = None
    ) -> ResourceState:
        state = state or ResourceState()
        runner = self.runner()
        for _ in range(n):
            obj = body(spec)
            if state.status is None:
                state.status = {}
            await runner.one_pass(obj, state, post_event=self.events.append)
        return state


def body(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "deployplane.io/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"namespace": NS, "name": "agent", "uid": "uid-1", "generation": 1,
                     "resourceVersion": "7", "finalizers": ["deployplane.io/finalizer"]},
        "spec": spec,
    }  # fmt: skip


OUTPUTS = {"writeOutputsTo": {"configMapName": "agent-outputs"}}


async def test_a_resource_without_the_field_makes_no_configmap_request() -> None:
    """The 1,000-resource benchmark's resources: not one request more."""
    rig = Rig()
    await rig.passes(3, {})
    assert rig.config_maps.calls == []


async def test_written_with_the_pass_that_sets_the_values_then_left_alone() -> None:
    rig = Rig()
    await rig.passes(4, OUTPUTS)
    made = rig.config_maps.maps["agent-outputs"]
    assert made["data"] == {"deploymentId": "dep-new", "latestRevisionId": ""}
    (ref,) = made["metadata"]["ownerReferences"]
    assert (ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == ("uid-1", True, True)
    writes = [c for c in rig.config_maps.calls if c[0] != "get"]
    assert writes == [("create", "agent-outputs")], "one write, then none at steady state"


async def test_a_configmap_not_ours_makes_the_resource_unsynced_and_is_untouched() -> None:
    rig = Rig()
    foreign = {"metadata": {"name": "agent-outputs"}, "data": {"theirs": "1"}}
    rig.config_maps.maps["agent-outputs"] = copy.deepcopy(foreign)
    await rig.passes(3, OUTPUTS)
    assert rig.config_maps.maps["agent-outputs"] == foreign
    assert {c[0] for c in rig.config_maps.calls} == {"get"}
    synced = [
        c for w in rig.sink.writes for c in w.get("conditions") or [] if c["type"] == "Synced"
    ]
    assert synced[-1]["status"] == "False"
    assert synced[-1]["reason"] == CONFIG_MAP_NOT_OWNED
    assert (
        "configmap agent-outputs exists and is not owned by agentdeployment agent"
        in (synced[-1]["message"])
    )
    warnings = [e for e in rig.events if e.reason == CONFIG_MAP_NOT_OWNED]
    assert len(warnings) == 1, "one Warning Event, not one per pass"
    assert warnings[0].type == "Warning"


async def test_a_configmap_not_ours_costs_no_status_write_at_later_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Synced=False keeps its lastTransitionTime: resyncs seconds apart write nothing."""
    clock = itertools.count()  # every reading one second later
    monkeypatch.setattr(conditions, "now_rfc3339", lambda: f"2026-01-01T00:{next(clock):05d}Z")
    rig = Rig()
    rig.config_maps.maps["agent-outputs"] = {"metadata": {"name": "agent-outputs"}, "data": {}}
    state = await rig.passes(2, OUTPUTS)  # created, then deployed: Ready, Synced=False
    settled = len(rig.sink.writes)
    await rig.passes(3, OUTPUTS, state)
    assert rig.sink.writes[settled:] == []


@dataclass
class RefusingConfigMaps(ConfigMaps):
    """The apiserver refuses the first `refusals` creates (RBAC, a 409, a timeout)."""

    refusals: int = 1

    async def create_config_map(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.calls.append(("create", body["metadata"]["name"]))
        if self.refusals > 0:
            self.refusals -= 1
            raise ConfigMapError("POST /api/v1/namespaces/team-a/configmaps: 403 forbidden")
        self.maps[body["metadata"]["name"]] = copy.deepcopy(dict(body))


async def test_a_refused_write_is_synced_false_the_status_still_written_and_retried() -> None:
    """A failed ConfigMap request does not fail the pass: the id the pass recorded is
    written, Synced=False names the request, the next pass (the error backoff, not the
    resync) writes the ConfigMap and the resource is Synced again."""
    rig = Rig(config_maps=RefusingConfigMaps())
    runner, state = rig.runner(), ResourceState()
    state.status = {}
    result = await runner.one_pass(body(OUTPUTS), state, post_event=rig.events.append)
    delay = result.requeue_after
    assert rig.config_maps.maps == {}
    assert rig.sink.writes[-1]["deploymentId"] == "dep-new"
    (synced,) = [c for c in rig.sink.writes[-1]["conditions"] if c["type"] == "Synced"]
    assert (synced["status"], synced["reason"]) == ("False", CONFIG_MAP_WRITE_FAILED)
    assert "POST /api/v1/namespaces/team-a/configmaps: 403 forbidden" in synced["message"]
    assert delay is not None
    assert delay <= Schedule().retry_delay(0)
    assert [e.reason for e in rig.events].count(CONFIG_MAP_WRITE_FAILED) == 1

    await runner.one_pass(body(OUTPUTS), state, post_event=rig.events.append)
    assert rig.config_maps.maps["agent-outputs"]["data"]["deploymentId"] == "dep-new"
    synced = next(c for c in state.status["conditions"] if c["type"] == "Synced")
    assert synced["status"] == "True"
