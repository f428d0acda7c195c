"""The dev cluster's pure parts without running a server: command lines, state file, PKI
layout, what `up` asks for."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deployplane.cli.root import root
from deployplane.devcluster import DevCluster, statefile
from deployplane.devcluster import cli as devcluster_cli
from deployplane.devcluster.commandlines import (
    AuditFiles,
    Ports,
    apiserver_argv,
    controller_manager_argv,
    etcd_argv,
    free_ports,
)
from deployplane.devcluster.errors import DevClusterError
from deployplane.devcluster.pki import pki_files, write_pki
from deployplane.devcluster.processes import ServerProcess
from deployplane.devcluster.workloads import DEFAULT_NODES


def test_free_ports_are_distinct() -> None:
    ports = free_ports()
    assert len({ports.etcd_client, ports.etcd_peer, ports.apiserver}) == 3


def test_etcd_and_apiserver_listen_on_the_ports_they_are_given(tmp_path: Path) -> None:
    ports = Ports(etcd_client=2379, etcd_peer=2380, apiserver=6443)
    etcd = etcd_argv(tmp_path / "etcd", tmp_path / "data", ports)
    assert "--listen-client-urls=http://127.0.0.1:2379" in etcd
    assert f"--data-dir={tmp_path / 'data'}" in etcd
    pki = pki_files(tmp_path / "pki")
    apiserver = apiserver_argv(tmp_path / "kas", ports, pki, tmp_path / "pki", None)
    assert "--secure-port=6443" in apiserver
    assert "--etcd-servers=http://127.0.0.1:2379" in apiserver
    assert not [a for a in apiserver if a.startswith("--audit")]
    audited = apiserver_argv(
        tmp_path / "kas", ports, pki, tmp_path / "pki", AuditFiles(tmp_path / "p", tmp_path / "l")
    )
    assert f"--audit-log-path={tmp_path / 'l'}" in audited
    assert f"--audit-policy-file={tmp_path / 'p'}" in audited


def test_controller_manager_runs_exactly_the_controllers_given(tmp_path: Path) -> None:
    argv = controller_manager_argv(tmp_path / "kcm", tmp_path / "k", ("a", "b"), tmp_path / "ca")
    assert "--controllers=a,b" in argv
    assert f"--kubeconfig={tmp_path / 'k'}" in argv


def test_pki_files_names_what_write_pki_writes(tmp_path: Path) -> None:
    written = write_pki(tmp_path / "pki")
    assert written == pki_files(tmp_path / "pki")
    assert all(Path(p).is_file() for p in vars(written).values())
    assert written.admin_key.stat().st_mode & 0o077 == 0  # keys are private


def test_state_file_round_trip_and_removal_keeps_foreign_files(tmp_path: Path) -> None:
    proc = ServerProcess(name="etcd", pid=123, executable="/bin/etcd", log=tmp_path / "e.log")
    statefile.write_state(tmp_path, {"server": "https://127.0.0.1:1", "nodes": 3}, [proc])
    state = statefile.read_state(tmp_path)
    assert state is not None
    assert state["server"] == "https://127.0.0.1:1"
    assert statefile.recorded_processes(state) == [proc]
    (tmp_path / "logs").mkdir()
    (tmp_path / "mine.txt").write_text("not the cluster's")
    statefile.remove_owned(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_unreadable_state_file_means_no_cluster(tmp_path: Path) -> None:
    assert statefile.read_state(tmp_path) is None
    (tmp_path / statefile.STATE_FILE).write_text("{not json")
    assert statefile.read_state(tmp_path) is None
    (tmp_path / statefile.STATE_FILE).write_text(json.dumps([1]))
    assert statefile.read_state(tmp_path) is None


def test_attach_reads_back_a_recorded_cluster(tmp_path: Path) -> None:
    assert DevCluster.attach(tmp_path) is None
    proc = ServerProcess(name="etcd", pid=2**22 + 7, executable="/bin/etcd", log=tmp_path / "l")
    fields = {"server": "https://127.0.0.1:1", "nodes": 2, "workloads": True, "audit_log": "a"}
    statefile.write_state(tmp_path, fields, [proc])
    cluster = DevCluster.attach(tmp_path)
    assert cluster is not None
    assert cluster.server == "https://127.0.0.1:1"
    assert cluster.server_processes == [proc]
    assert (cluster.settings.nodes, cluster.settings.workloads) == (2, True)
    assert cluster.settings.audit_log
    assert cluster.settings.detached
    assert not cluster.settings.controller_manager
    assert not cluster.running()  # no such pid
    cluster.stop()  # an attached cluster owns its files: stop removes them
    assert statefile.read_state(tmp_path) is None


def test_up_help_shows_the_real_default_of_kwok_nodes() -> None:
    result = CliRunner().invoke(root, ["dev", "cluster", "up", "--help"])
    assert result.exit_code == 0
    # the option's entry: its line and the lines its help wraps onto
    entry = result.output.split("--kwok-nodes", 1)[1].split("\n  -", 1)[0]
    assert re.search(rf"\[default: {DEFAULT_NODES}\b", entry), entry
    assert "-1" not in entry, entry


@pytest.mark.parametrize(
    ("args", "nodes"),
    [([], DEFAULT_NODES), (["--real-node"], 0), (["--real-node", "--kwok-nodes", "2"], 2),
     (["--kwok-nodes", "0"], 0)],
    ids=repr,
)  # fmt: skip
def test_up_starts_the_kwok_nodes_asked_for(
    args: list[str], nodes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, Any] = {}

    class Recorded:
        def __init__(self, state_dir: Path, **settings: Any) -> None:
            started.update(settings)

        @staticmethod
        def attach(state_dir: Path) -> None:
            return None

        def start(self) -> None:
            raise DevClusterError("recorded, not started")

    monkeypatch.setattr(devcluster_cli, "DevCluster", Recorded)
    argv = ["dev", "cluster", "up", "--state-dir", str(tmp_path), *args]
    result = CliRunner().invoke(root, argv)
    assert result.exit_code == 1, result.output
    assert started["nodes"] == nodes
