"""managementPolicy ObserveOnly in the generic reconciler: found and reported, never
created, changed, redeployed or deleted; Full takes it over with only the differences."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.fakeexternal import (
    DEP_ID,
    ConnecterFns,
    ExternalFns,
    FakeSpec,
    FakeStatus,
    observed,
    returns,
)

from deployplane.kinds.common import ManagementPolicy
from deployplane.reconcile.external import ABSENT, Managed
from deployplane.reconcile.reconciler import Reconciler
from deployplane.reconcile.schedule import Schedule

WRITES = {"create", "update", "delete", "mark", "unmark", "write"}


def managed(policy: ManagementPolicy, **status: Any) -> Managed[FakeSpec, FakeStatus]:
    return Managed(
        "team-a",
        "agent",
        "uid-1",
        1,
        FakeSpec(management_policy=policy),
        FakeStatus.model_validate(status),
        resource_version="7",
    )


def reconciler(ext: ExternalFns) -> Reconciler[FakeSpec, FakeStatus]:
    return Reconciler(ConnecterFns(ext), kind="deployment", schedule=Schedule())


def writes(ext: ExternalFns) -> list[Any]:
    return [call for call in ext.journal if call[0] in WRITES]


async def test_found_by_natural_key_reported_ready_and_nothing_written() -> None:
    ext = ExternalFns(
        find_fn=returns(DEP_ID), observe_fn=lambda i, _f: observed(i, up_to_date=False)
    )
    outcome = await reconciler(ext).reconcile(managed(ManagementPolicy.OBSERVE_ONLY), writes=ext)
    assert outcome.status.deployment_id == DEP_ID
    ready = next(c for c in outcome.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("True", "Deployed")
    assert writes(ext) == [], "drift is never corrected in ObserveOnly"
    assert ("observe", DEP_ID, False) in ext.journal
    assert ext.resolved == 0, "no references resolved: nothing is sent"
    assert "Observing" in [e.reason for e in outcome.events]


async def test_found_by_the_spec_id_without_a_lookup() -> None:
    ext = ExternalFns(adopt_id="dep-given")
    outcome = await reconciler(ext).reconcile(managed(ManagementPolicy.OBSERVE_ONLY), writes=ext)
    assert outcome.status.deployment_id == "dep-given"
    assert ("find",) not in ext.journal


async def test_not_found_creates_nothing_and_says_so() -> None:
    ext = ExternalFns()
    outcome = await reconciler(ext).reconcile(managed(ManagementPolicy.OBSERVE_ONLY), writes=ext)
    assert writes(ext) == []
    synced = next(c for c in outcome.status.conditions if c.type == "Synced")
    assert (synced.status, synced.reason) == ("False", "NotFound")
    assert "observe-only: no deployment 'agent'" in synced.message
    assert not outcome.state.settled, "looked for again (with the error backoff)"


async def test_a_recorded_id_that_disappeared_is_not_created_again() -> None:
    ext = ExternalFns(observe_fn=lambda _i, _f: ABSENT)
    policy = ManagementPolicy.OBSERVE_ONLY
    outcome = await reconciler(ext).reconcile(managed(policy, deploymentId=DEP_ID), writes=ext)
    assert writes(ext) == []
    assert outcome.state.value == "retrying"


@pytest.mark.parametrize("deletion", ["Delete", "Orphan"])
async def test_deleting_the_resource_deletes_nothing(deletion: str) -> None:
    ext = ExternalFns()
    mr = managed(ManagementPolicy.OBSERVE_ONLY, deploymentId=DEP_ID)
    mr.spec.deletion_policy = mr.spec.deletion_policy.__class__(deletion)
    assert await reconciler(ext).finalize(mr) is True
    assert ext.journal == []


async def test_full_takes_over_and_patches_only_when_it_differs() -> None:
    in_sync = ExternalFns()
    mr = managed(ManagementPolicy.FULL, deploymentId=DEP_ID)
    await reconciler(in_sync).reconcile(mr, writes=in_sync, resync_due=True)
    assert writes(in_sync) == []
    drifted = ExternalFns(observe_fn=lambda i, _f: observed(i, up_to_date=False, drift=("image",)))
    outcome = await reconciler(drifted).reconcile(mr, writes=drifted, resync_due=True)
    assert writes(drifted) == [("update",)]
    assert "Applied the change to image" in [e.message for e in outcome.events]
