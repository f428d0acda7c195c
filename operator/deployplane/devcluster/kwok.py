"""kwok's configuration for the dev cluster: fake nodes and the Stages that play kubelets.

kwok (sigs.k8s.io/kwok) watches nodes and pods and moves them through *Stages*:
a Stage selects objects (CEL or jq expressions) and patches their status. kwok ships
no built-in Stages (it refuses to start without any), so we give it ours in a config
file: the upstream "fast" node and pod Stages (kustomize/stage/{node,pod}/fast and
volume/fast of kwok v0.8, Apache-2.0), with two changes that make failures testable:

- `pod-ready` skips pods with an image reference containing `fail-pull`;
- `pod-fail-pull` gives those pods what a kubelet reports for an image it cannot pull:
  container waiting reason `ErrImagePull`, then `pod-image-pull-backoff` turns it into
  `ImagePullBackOff`. The pods never become Ready, so a Deployment's progress deadline
  is exceeded as on a real cluster.

No heartbeat Stage and no node leases: nothing in the dev cluster marks silent nodes
NotReady (no node-lifecycle controller), and an idle cluster then writes nothing.
"""

from __future__ import annotations

from typing import Any

import yaml

FAIL_PULL_PATTERN = "fail-pull"
NODE_ANNOTATION = "kwok.x-k8s.io/node"
NODE_ANNOTATION_VALUE = "fake"
STORAGE_CLASS = "kwok-volume"
# Pod IPs come from here; it must not overlap the Service range (10.0.0.0/24).
POD_CIDR = "10.244.0.0/16"
NODE_IP = "10.250.0.1"

# Per fake node: a common small cloud machine, so "too big to schedule" is easy to write.
NODE_CPU = "4"
NODE_MEMORY = "16Gi"
NODE_PODS = "110"

_STAGE_API = "kwok.x-k8s.io/v1alpha1"


# Node and Pod selectors are jq, as in kwok's own Stages: kwok's CEL environment types
# Pods and Nodes and cannot resolve list elements inside macros (`conditions.exists(c,
# c.type == ...)` fails to compile). PVCs and PVs use CEL on plain fields, as upstream.
Jq = tuple[str, str, list[str]]


def _jq(*requirements: Jq) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"jq": {"key": key, "operator": op, **({"values": values} if values else {})}}
            for key, op, values in requirements
        ]
    }


def _cel(*expressions: str) -> dict[str, Any]:
    return {"matchExpressions": [{"cel": {"expression": e}} for e in expressions]}


_NOT_DELETED: Jq = (".metadata.deletionTimestamp", "DoesNotExist", [])
_PENDING: Jq = (".status.phase", "In", ["Pending"])
_NOT_READY: Jq = ('.status.conditions.[] | select( .type == "Ready" ) | .status', "NotIn", ["True"])


def _any_image_contains(pattern: str) -> str:
    """jq: "true" when an image of the pod's containers or init containers has `pattern`."""
    return (
        "[(.spec.containers // [])[].image, (.spec.initContainers // [])[].image]"
        f' | any(contains("{pattern}"))'
    )


def _waiting_reason() -> str:
    return ".status.containerStatuses[]?.state.waiting.reason"


def _stage(name: str, kind: str, selector: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": _STAGE_API,
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {"resourceRef": {"apiGroup": "v1", "kind": kind}, "selector": selector, **spec},
    }


def _status_patch(template: str) -> dict[str, Any]:
    return {"patch": {"root": "status", "subresource": "status", "template": template}}


_NODE_INITIALIZE = """\
{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
addresses:
{{ with NodeIP }}
- address: {{ . | Quote }}
  type: InternalIP
{{ end }}
- address: {{ .metadata.name | Quote }}
  type: Hostname
allocatable:
{{ with .status.allocatable }}
{{ YAML . 1 }}
{{ else }}
  cpu: "4"
  memory: 16Gi
  pods: "110"
{{ end }}
capacity:
{{ with .status.capacity }}
{{ YAML . 1 }}
{{ else }}
  cpu: "4"
  memory: 16Gi
  pods: "110"
{{ end }}
nodeInfo:
  architecture: amd64
  containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
  kernelVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeProxyVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
  operatingSystem: linux
phase: Running
"""

_POD_READY = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  {{ if eq .restartPolicy "Always" }}
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else }}
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""


def _pull_failure(reason: str, message: str) -> str:
    """Status of a pod whose images cannot be pulled, as a kubelet reports it."""
    return f"""\
{{{{ $now := Now }}}}
conditions:
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "True"
  type: Initialized
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  reason: ContainersNotReady
  type: Ready
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  reason: ContainersNotReady
  type: ContainersReady
containerStatuses:
{{{{ range .spec.containers }}}}
- image: {{{{ .image | Quote }}}}
  name: {{{{ .name | Quote }}}}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: {reason}
      message: {{{{ printf "{message}" .image | Quote }}}}
{{{{ end }}}}
phase: Pending
startTime: {{{{ $now | Quote }}}}
"""


def node_stages() -> list[dict[str, Any]]:
    return [
        _stage(
            "node-initialize",
            "Node",
            _jq(_NOT_READY),
            steps=[_status_patch(_NODE_INITIALIZE)],
        )
    ]


def pod_stages() -> list[dict[str, Any]]:
    fails = _any_image_contains(FAIL_PULL_PATTERN)
    return [
        _stage(
            "pod-ready",
            "Pod",
            _jq(_NOT_DELETED, _PENDING, _NOT_READY, (fails, "NotIn", ["true"])),
            steps=[_status_patch(_POD_READY)],
        ),
        _stage(
            "pod-fail-pull",
            "Pod",
            _jq(
                _NOT_DELETED,
                _PENDING,
                (fails, "In", ["true"]),
                (_waiting_reason(), "NotIn", ["ErrImagePull", "ImagePullBackOff"]),
            ),
            steps=[
                _status_patch(
                    _pull_failure("ErrImagePull", 'Failed to pull image \\"%s\\": not found')
                )
            ],
        ),
        _stage(
            "pod-image-pull-backoff",
            "Pod",
            _jq(_NOT_DELETED, _PENDING, (_waiting_reason(), "In", ["ErrImagePull"])),
            delay={"durationMilliseconds": 2000},
            steps=[
                _status_patch(_pull_failure("ImagePullBackOff", 'Back-off pulling image \\"%s\\"'))
            ],
        ),
        _stage(
            "pod-complete",
            "Pod",
            _jq(
                _NOT_DELETED,
                (".status.phase", "In", ["Running"]),
                (".metadata.ownerReferences.[].kind", "In", ["Job"]),
            ),
            steps=[
                _status_patch(
                    "{{ $now := Now }}\n"
                    "containerStatuses:\n"
                    "{{ range .spec.containers }}\n"
                    "- image: {{ .image | Quote }}\n"
                    "  name: {{ .name | Quote }}\n"
                    "  ready: false\n"
                    "  restartCount: 0\n"
                    "  started: false\n"
                    "  state:\n"
                    "    terminated:\n"
                    "      exitCode: 0\n"
                    "      finishedAt: {{ $now | Quote }}\n"
                    "      reason: Completed\n"
                    "      startedAt: {{ $now | Quote }}\n"
                    "{{ end }}\n"
                    "phase: Succeeded\n"
                )
            ],
        ),
        # Without a kubelet nobody would finish a graceful deletion.
        _stage(
            "pod-delete",
            "Pod",
            _jq((".metadata.deletionTimestamp", "Exists", [])),
            steps=[{"delete": True}],
        ),
    ]


_PV_FOR_CLAIM = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pvc-{{ .metadata.uid }}
  annotations:
    pv.kubernetes.io/provisioned-by: kwok.x-k8s.io/volume
spec:
  accessModes:
  {{ YAML .spec.accessModes 2 }}
  capacity:
  {{ YAML .spec.resources.requests 2 }}
  persistentVolumeReclaimPolicy: Delete
  storageClassName: {{ .spec.storageClassName | Quote }}
  volumeMode: {{ default "Filesystem" .spec.volumeMode | Quote }}
  claimRef:
    apiVersion: v1
    kind: PersistentVolumeClaim
    name: {{ .metadata.name | Quote }}
    namespace: {{ .metadata.namespace | Quote }}
    resourceVersion: {{ .metadata.resourceVersion | Quote }}
    uid: {{ .metadata.uid | Quote }}
  hostPath:
    path: /tmp/kwok-volume/pvc-{{ .metadata.uid }}
    type: DirectoryOrCreate
"""


def volume_stages() -> list[dict[str, Any]]:
    """A fake provisioner for the `kwok-volume` StorageClass (PostgreSQL's PVCs)."""
    ours = f"self.spec.storageClassName == '{STORAGE_CLASS}'"
    not_deleted = "!has(self.metadata.deletionTimestamp)"
    return [
        _stage(
            "pvc-provision",
            "PersistentVolumeClaim",
            _cel(ours, not_deleted, "!has(self.spec.volumeName)"),
            steps=[
                {"apply": {"template": _PV_FOR_CLAIM}},
                {
                    "patch": {
                        "root": "metadata",
                        "template": "annotations:\n"
                        '  pv.kubernetes.io/bind-completed: "yes"\n'
                        '  pv.kubernetes.io/bound-by-controller: "yes"\n'
                        "  volume.kubernetes.io/storage-provisioner: kwok.x-k8s.io/volume\n",
                    }
                },
                {"patch": {"root": "spec", "template": "volumeName: pvc-{{ .metadata.uid }}\n"}},
                _status_patch(
                    "phase: Bound\n"
                    "accessModes:\n{{ YAML .spec.accessModes 1 }}\n"
                    "capacity:\n{{ YAML .spec.resources.requests 1 }}\n"
                ),
            ],
        ),
        _stage(
            "pv-bind",
            "PersistentVolume",
            _cel(
                ours,
                not_deleted,
                "has(self.spec.claimRef)",
                "!has(self.status.phase)"
                " || !(self.status.phase in ['Bound', 'Released', 'Failed'])",
            ),
            steps=[_status_patch("phase: Bound\n")],
        ),
        # The claim is gone (a deleted StatefulSet takes its PVCs along): so is the volume.
        _stage(
            "pvc-delete",
            "PersistentVolumeClaim",
            _cel(ours, "has(self.metadata.deletionTimestamp)", "has(self.spec.volumeName)"),
            steps=[
                {
                    "apply": {
                        "subresource": "status",
                        "type": "merge",
                        "template": "apiVersion: v1\nkind: PersistentVolume\n"
                        "metadata:\n  name: {{ .spec.volumeName | Quote }}\n"
                        "status:\n  phase: Released\n",
                    }
                }
            ],
        ),
        _stage(
            "pv-delete",
            "PersistentVolume",
            _cel(ours, not_deleted, "has(self.status.phase) && self.status.phase == 'Released'"),
            steps=[{"delete": True}],
        ),
    ]


def config_yaml() -> str:
    """The `--config` file: every Stage.

    Options go on the command line (`option_flags`): a KwokConfiguration in the file
    replaces kwok's defaults wholesale (unset parallelism settings become 0, which
    kwok refuses), while flags start from those defaults.
    """
    docs = [*node_stages(), *pod_stages(), *volume_stages()]
    return yaml.safe_dump_all(docs, sort_keys=False)


def option_flags() -> list[str]:
    # Neither --node-port nor --server-address: kwok then serves nothing (logs, exec,
    # metrics), which nothing here uses and which would need a port.
    return [
        f"--cidr={POD_CIDR}",
        f"--node-ip={NODE_IP}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}={NODE_ANNOTATION_VALUE}",
    ]


def node_manifest(name: str) -> dict[str, Any]:
    """A fake node kwok manages, with the allocatable resources of a small machine."""
    resources = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": NODE_PODS}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: NODE_ANNOTATION_VALUE},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def storage_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kwok.x-k8s.io/volume",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
