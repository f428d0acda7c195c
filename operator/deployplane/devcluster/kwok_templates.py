"""The Go templates kwok's Stages fill in: the status a kubelet would write, as text.

Data, not logic: each template is what one upstream "fast" Stage of kwok v0.8
(kustomize/stage/{node,pod,volume}/fast, Apache-2.0) patches into an object, plus the
image-pull failure of `pod-fail-pull` (see kwok.py). Blocks the templates share are
built by the small functions below, so a fix to one container status shape reaches
every Stage that writes it.
"""

from __future__ import annotations

# Without a `.status.<field>` on the Node (kwok nodes we create carry one), the same
# resources as `kwok.node_manifest` gives: a small cloud machine.
_DEFAULT_NODE_RESOURCES = """\
  cpu: "4"
  memory: 16Gi
  pods: "110"
"""


def _node_resources(field: str) -> str:
    return f"""\
{field}:
{{{{ with .status.{field} }}}}
{{{{ YAML . 1 }}}}
{{{{ else }}}}
{_DEFAULT_NODE_RESOURCES}{{{{ end }}}}
"""


NODE_INITIALIZE = (
    """\
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
"""
    + _node_resources("allocatable")
    + _node_resources("capacity")
    + """\
nodeInfo:
  architecture: amd64
  containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
  kernelVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeProxyVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
  operatingSystem: linux
phase: Running
"""
)


def _terminated(indent: str) -> str:
    """A container state `terminated` with exit code 0, at `indent`."""
    return (
        f"{indent}state:\n"
        f"{indent}  terminated:\n"
        f"{indent}    exitCode: 0\n"
        f"{indent}    finishedAt: {{{{ $now | Quote }}}}\n"
        f"{indent}    reason: Completed\n"
        f"{indent}    startedAt: {{{{ $now | Quote }}}}\n"
    )


def _container_statuses(ready: bool, state: str) -> str:
    """`containerStatuses` of every container of the pod, each in `state` (indented 2)."""
    flag = "true" if ready else "false"
    return (
        "containerStatuses:\n"
        "{{ range .spec.containers }}\n"
        "- image: {{ .image | Quote }}\n"
        "  name: {{ .name | Quote }}\n"
        f"  ready: {flag}\n"
        "  restartCount: 0\n"
        f"  started: {flag}\n"
        f"{state}"
        "{{ end }}\n"
    )


def _pod_conditions(*, ready: bool) -> str:
    """`$now` and the pod's conditions: Initialized, and Ready and ContainersReady or not."""
    status = '"True"' if ready else '"False"\n  reason: ContainersNotReady'
    text = "{{ $now := Now }}\nconditions:\n"
    for condition, condition_status in (
        ("Initialized", '"True"'),
        ("Ready", status),
        ("ContainersReady", status),
    ):
        text += (
            "- lastTransitionTime: {{ $now | Quote }}\n"
            f"  status: {condition_status}\n"
            f"  type: {condition}\n"
        )
    return text


_RUNNING = """\
  state:
    running:
      startedAt: {{ $now | Quote }}
"""


def _ips(field: str) -> str:
    """`<field>` and `<field>s` from the template variable `$<field>s`, when it has any."""
    return (
        f"{{{{ with ${field}s }}}}\n"
        f"{field}: {{{{ index . 0 | Quote }}}}\n"
        f"{field}s:\n"
        "{{ range . }}\n"
        "- ip: {{ . | Quote }}\n"
        "{{ end }}\n"
        "{{ end }}\n"
    )


POD_READY = (
    _pod_conditions(ready=True)
    + """\
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}
"""
    + _container_statuses(True, _RUNNING)
    + """\
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
"""
    + _terminated("  ")
    + """\
  {{ end }}
{{ end }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
"""
    + _ips("hostIP")
    + """\
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
"""
    + _ips("podIP")
    + """\
phase: Running
startTime: {{ $now | Quote }}
"""
)

# A Job's pod: its containers ran to completion.
POD_COMPLETE = (
    "{{ $now := Now }}\n" + _container_statuses(False, _terminated("  ")) + "phase: Succeeded\n"
)


def pull_failure(reason: str, message: str) -> str:
    """Status of a pod whose images cannot be pulled, as a kubelet reports it."""
    waiting = (
        "  state:\n"
        "    waiting:\n"
        f"      reason: {reason}\n"
        f'      message: {{{{ printf "{message}" .image | Quote }}}}\n'
    )
    return (
        _pod_conditions(ready=False)
        + _container_statuses(False, waiting)
        + """\
phase: Pending
startTime: {{ $now | Quote }}
"""
    )


# On kwok nodes the volume is never mounted; on the real node the kubelet creates it in
# the node's private /var/lib (realnode/layout.py), so it goes with the node's state.
PV_FOR_CLAIM = """\
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
    path: /var/lib/kwok-volume/pvc-{{ .metadata.uid }}
    type: DirectoryOrCreate
"""

# What the PV controller writes on a claim it has bound.
CLAIM_BOUND_ANNOTATIONS = (
    "annotations:\n"
    '  pv.kubernetes.io/bind-completed: "yes"\n'
    '  pv.kubernetes.io/bound-by-controller: "yes"\n'
    "  volume.kubernetes.io/storage-provisioner: kwok.x-k8s.io/volume\n"
)
CLAIM_VOLUME_NAME = "volumeName: pvc-{{ .metadata.uid }}\n"
CLAIM_BOUND_STATUS = (
    "phase: Bound\n"
    "accessModes:\n{{ YAML .spec.accessModes 1 }}\n"
    "capacity:\n{{ YAML .spec.resources.requests 1 }}\n"
)
# Applied to the claim's volume once the claim is being deleted.
VOLUME_RELEASED = (
    "apiVersion: v1\nkind: PersistentVolume\n"
    "metadata:\n  name: {{ .spec.volumeName | Quote }}\n"
    "status:\n  phase: Released\n"
)
