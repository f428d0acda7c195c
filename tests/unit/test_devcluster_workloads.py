"""The dev cluster's workload option without running it: kwok's config and clear errors."""

from __future__ import annotations

from pathlib import Path

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


def test_kwok_config_has_its_options_and_every_stage() -> None:
    options, *stages = list(yaml.safe_load_all(config_yaml()))
    assert options["kind"] == "KwokConfiguration"
    # kwok serves nothing (no port to pick or expose) and manages only our fake nodes.
    assert options["options"]["nodePort"] == 0
    assert "serverAddress" not in options["options"]
    assert options["options"]["manageAllNodes"] is False
    assert options["options"]["manageNodesWithAnnotationSelector"] == f"{NODE_ANNOTATION}=fake"
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


def _selectors(stage_name: str) -> list[str]:
    stages = {s["metadata"]["name"]: s for s in list(yaml.safe_load_all(config_yaml()))[1:]}
    expressions = stages[stage_name]["spec"]["selector"]["matchExpressions"]
    return [e["cel"]["expression"] for e in expressions]


def test_fail_pull_images_go_to_the_failing_stage_and_never_to_pod_ready() -> None:
    matches = f"c.image.contains('{FAIL_PULL_PATTERN}')"
    ready = _selectors("pod-ready")
    failing = _selectors("pod-fail-pull")
    negated = [e for e in ready if e.startswith("!(") and matches in e]
    assert len(negated) == 1
    assert negated[0][2:-1] in failing  # the very expression, once negated, once not


def test_fake_nodes_have_realistic_allocatable_and_no_taints() -> None:
    node = node_manifest("kwok-node-0")
    assert node["metadata"]["annotations"] == {NODE_ANNOTATION: "fake"}
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert "taints" not in node.get("spec", {})


def test_component_argv_point_at_their_own_kubeconfigs(tmp_path: Path) -> None:
    argv = scheduler_argv(tmp_path / "kube-scheduler", tmp_path / "scheduler.kubeconfig")
    assert f"--kubeconfig={tmp_path / 'scheduler.kubeconfig'}" in argv
    assert "--secure-port=0" in argv
    assert kwok_argv(tmp_path / "kwok", tmp_path / "k", tmp_path / "c.yaml")[1:] == [
        f"--kubeconfig={tmp_path / 'k'}",
        f"--config={tmp_path / 'c.yaml'}",
    ]


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
