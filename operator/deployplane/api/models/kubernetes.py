"""Shapes the spec copies from Kubernetes (inside `resource_spec`): camelCase on the
wire and on both sides, unlike the rest of the API."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from deployplane.api.models.common import FreeForm


class K8sShapedModel(BaseModel):
    """Shapes the spec copies from Kubernetes: field names are camelCase on the wire."""

    model_config = ConfigDict(extra="ignore")


class VolumeMount(K8sShapedModel):
    """Where a volume is mounted in a container."""

    name: str | None = Field(None, description="Name of the volume to mount.")
    mountPath: str | None = Field(None, description="Path in the container.")
    subPath: str | None = Field(None, description="Path within the volume.")
    mountPropagation: str | None = Field(None, description="Mount propagation mode.")
    subPathExpr: str | None = Field(None, description="Expanded path within the volume.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class EnvVar(K8sShapedModel):
    """An environment variable of a container."""

    name: str = Field(description="Variable name.")
    value: str | None = Field(None, description="Literal value.")
    valueFrom: FreeForm | None = Field(None, description="Source of the value (free-form).")


class ContainerResources(K8sShapedModel):
    """Compute resources of a container."""

    limits: FreeForm | None = Field(None, description="Resource limits (free-form).")
    requests: FreeForm | None = Field(None, description="Resource requests (free-form).")


class Container(K8sShapedModel):
    """An init container or sidecar."""

    name: str | None = Field(None, description="Container name.")
    image: str | None = Field(None, description="Container image.")
    imagePullPolicy: str | None = Field(None, description="Image pull policy.")
    workingDir: str | None = Field(None, description="Working directory.")
    restartPolicy: str | None = Field(None, description="Restart policy.")
    command: list[str] | None = Field(None, description="Entrypoint.")
    args: list[str] | None = Field(None, description="Arguments to the entrypoint.")
    env: list[EnvVar] | None = Field(None, description="Environment variables.")
    envFrom: list[FreeForm] | None = Field(None, description="Environment sources (free-form).")
    resources: ContainerResources | None = Field(None, description="Compute resources.")
    volumeMounts: list[VolumeMount] | None = Field(None, description="Volume mounts.")
    securityContext: FreeForm | None = Field(None, description="Security context (free-form).")


class Volume(K8sShapedModel):
    """A volume; each source is a free-form object as in Kubernetes."""

    name: str = Field(description="Volume name.")
    configMap: FreeForm | None = Field(None, description="ConfigMap volume source.")
    secret: FreeForm | None = Field(None, description="Secret volume source.")
    emptyDir: FreeForm | None = Field(None, description="EmptyDir volume source.")
    persistentVolumeClaim: FreeForm | None = Field(None, description="PVC volume source.")
    nfs: FreeForm | None = Field(None, description="NFS volume source.")
    projected: FreeForm | None = Field(None, description="Projected volume source.")
    downwardAPI: FreeForm | None = Field(None, description="Downward API volume source.")
    csi: FreeForm | None = Field(None, description="CSI volume source.")
