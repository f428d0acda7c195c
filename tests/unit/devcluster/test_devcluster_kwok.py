"""The dev cluster's workload option without running it: kwok's config and clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from deployplane.devcluster import DevCluster, DevClusterError, Tools
from deployplane.devcluster.kwok import (
    FAIL_PULL_PATTERN,
    NODE_ANNOTATION,
    config_yaml,
    node_manifest,
)
from deployplane.devcluster.workloads import kwok_argv, scheduler_argv


def test_kwok_config_has_every_stage() -> None:
    stages = list(yaml.safe_load_all(config_yaml()))
    assert {s["kind"] for s in stages} == {"Stage"}
    assert [s["metadata"]["name"] for s in stages] == [
        "node-initialize",
        "pod-ready",
        "pod-fail-pull",
        "pod-image-pull-backoff",
        "pod-complete",
        "pod-delete",
        "pvc-provision",
        "pv-bind",
        "pvc-delete",
        "pv-delete",
    ]


def _selectors(stage_name: str) -> list[dict[str, Any]]:
    stages = {s["metadata"]["name"]: s for s in yaml.safe_load_all(config_yaml())}
    return [e["jq"] for e in stages[stage_name]["spec"]["selector"]["matchExpressions"]]


def test_fail_pull_images_go_to_the_failing_stage_and_never_to_pod_ready() -> None:
    def on_image(stage: str) -> list[tuple[str, list[str]]]:
        return [
            (e["operator"], e["values"]) for e in _selectors(stage) if FAIL_PULL_PATTERN in e["key"]
        ]

    # The very same jq expression: "true" goes to pod-fail-pull, anything else to pod-ready.
    keys = {e["key"] for s in ("pod-ready", "pod-fail-pull") for e in _selectors(s)}
    assert len([k for k in keys if FAIL_PULL_PATTERN in k]) == 1
    assert on_image("pod-ready") == [("NotIn", ["true"])]
    assert on_image("pod-fail-pull") == [("In", ["true"])]


def test_fake_nodes_have_realistic_allocatable_and_no_taints() -> None:
    node = node_manifest("kwok-node-0")
    assert node["metadata"]["annotations"] == {NODE_ANNOTATION: "fake"}
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "16Gi",
        "pods": "110",
        "ephemeral-storage": "50Gi",  # pods that request local disk are scheduled
    }
    assert "taints" not in node.get("spec", {})


def test_component_argv_point_at_their_own_kubeconfigs(tmp_path: Path) -> None:
    argv = scheduler_argv(tmp_path / "kube-scheduler", tmp_path / "scheduler.kubeconfig")
    assert f"--kubeconfig={tmp_path / 'scheduler.kubeconfig'}" in argv
    assert "--secure-port=0" in argv
    argv = kwok_argv(tmp_path / "kwok", tmp_path / "k", tmp_path / "c.yaml")
    assert argv[1:3] == [f"--kubeconfig={tmp_path / 'k'}", f"--config={tmp_path / 'c.yaml'}"]
    # kwok manages only our fake nodes and serves nothing (no port to pick or expose).
    assert "--manage-all-nodes=false" in argv
    assert f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake" in argv
    assert not [a for a in argv if a.startswith(("--node-port", "--server-address"))]


def test_workloads_without_kwok_or_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    tools = Tools(
        bin_dir=tmp_path,
        etcd=tmp_path / "etcd",
        kube_apiserver=tmp_path / "kube-apiserver",
        kube_controller_manager=tmp_path / "kube-controller-manager",
        kubectl=None,
        helm=None,
    )
    with pytest.raises(DevClusterError) as info:
        DevCluster(tmp_path / "state", tools=tools, workloads=True).start()
    assert str(info.value) == (
        f"workloads=True needs kube-scheduler and kwok in {tmp_path}; build them with `make tools`"
    )
    assert not (tmp_path / "state").exists()  # refused before writing anything
