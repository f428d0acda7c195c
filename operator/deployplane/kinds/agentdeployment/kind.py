"""The AgentDeployment kind: an agent-server deployment on the control plane.

Its CEL rules (what `kubectl apply` refuses) and `kubectl get` columns live here with
its names; the generic parts (schema walking, CRD assembly) are in `deployplane.crd`.
"""

from __future__ import annotations

from typing import Final

from deployplane.crd.cel import (
    REQUIRED,
    Rule,
    Rules,
    at_most,
    fixed_once_created,
    forbidden_for,
    has,
    present,
    required_for,
)
from deployplane.crd.columns import column, connection_column, policy_column, printer_columns
from deployplane.kinds.agentdeployment.spec import AgentDeploymentSpec
from deployplane.kinds.agentdeployment.status import AgentDeploymentStatus
from deployplane.kinds.registry import KindDef

_GIT_ONLY_FIELDS: Final = (
    "sourceConfig.integrationId",
    "sourceConfig.deploymentType",
    "sourceConfig.repoUrl",
    "sourceConfig.repository",
    "sourceConfig.buildOnPush",
    "sourceRevisionConfig.repoRef",
    "sourceRevisionConfig.graphConfigPath",
)

RESOURCES: Final = "sourceConfig.resourceSpec"
_SCALE_BOUNDS: Final = (
    ("minScale", "maxScale"),
    ("queueMinScale", "queueMaxScale"),
    ("orchestratorMinScale", "orchestratorMaxScale"),
)
_REQUESTS_AND_LIMITS: Final = (
    ("cpu", "cpuLimit"),
    ("memoryMb", "memoryLimitMb"),
    ("queueCpu", "queueCpuLimit"),
    ("queueMemoryMb", "queueMemoryLimitMb"),
    ("orchestratorCpu", "orchestratorCpuLimit"),
    ("orchestratorMemoryMb", "orchestratorMemoryLimitMb"),
    ("dbCpu", "dbCpuLimit"),
    ("dbMemoryMb", "dbMemoryLimitMb"),
)

DNS1123_SUBDOMAIN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A Kubernetes object name (a CEL string literal: the backslash is escaped)."""

OBJECT_RULES: Final = (
    # Correctable in git while no deployment exists for it on the control plane: the
    # name (it defaults to metadata.name and names the deployment for good), the agent
    # and environment (they key the deployment for good: another environment is another
    # AgentDeployment), the source, the deployment type, and the id of one to adopt.
    fixed_once_created(
        "name", "deploymentId", "deployment", "AgentDeployment", presence="optional"
    ),
    fixed_once_created(
        "agent", "deploymentId", "deployment", "AgentDeployment", presence="optional"
    ),
    fixed_once_created("source", "deploymentId", "deployment", "AgentDeployment"),
    fixed_once_created(
        "sourceConfig.deploymentType",
        "deploymentId",
        "deployment",
        "AgentDeployment",
        presence="optional",
    ),
    fixed_once_created(
        "deploymentId", "deploymentId", "deployment", "AgentDeployment", presence="once set"
    ),
)

RULES: Final[Rules] = {
    "": [
        Rule(
            "!(has(self.agent) && has(self.name))",
            "spec.agent and spec.name are mutually exclusive: the control plane names the "
            "deployment of an agent",
            field_path=".agent",
        ),
        required_for("git_host", "sourceConfig.integrationId"),
        Rule(
            "self.source != 'git_host' || "
            f"({present('sourceConfig.repoUrl')}) || ({has('sourceConfig.repository')})",
            "spec.sourceConfig.repoUrl or spec.sourceConfig.repository is required when "
            "spec.source is git_host",
            field_path=".sourceConfig",
            reason=REQUIRED,
        ),
        # A repository reference gives the ref too (its default branch); a bare URL does
        # not, and the control plane refuses a git_host deployment without one.
        Rule(
            f"self.source != 'git_host' || !({present('sourceConfig.repoUrl')}) || "
            f"({has('sourceConfig.repository')}) || ({present('sourceRevisionConfig.repoRef')})",
            "spec.sourceRevisionConfig.repoRef is required when spec.source is git_host and "
            "spec.sourceConfig.repoUrl is given (and not empty; with spec.sourceConfig.repository "
            "instead it defaults to the repository's default branch)",
            field_path=".sourceRevisionConfig.repoRef",
            reason=REQUIRED,
        ),
        required_for("git_host", "sourceRevisionConfig.graphConfigPath"),
        forbidden_for(
            "git_host",
            "sourceRevisionConfig.imageUri",
            "git_host builds the image from the repository",
        ),
        required_for("external_docker", "sourceRevisionConfig.imageUri"),
        forbidden_for("git_host", "secretReferences", "external_docker only"),
        forbidden_for(
            "git_host",
            "sourceConfig.customUrl",
            "the service sets a git_host deployment's URL itself; see status.url",
        ),
        *(forbidden_for("external_docker", path, "git_host only") for path in _GIT_ONLY_FIELDS),
        Rule(
            "!(has(self.sourceConfig) && has(self.sourceConfig.buildOnPush) && "
            "self.sourceConfig.buildOnPush && has(self.sourceRevisionConfig) && "
            "has(self.sourceRevisionConfig.repoRef) && "
            "self.sourceRevisionConfig.repoRef.startsWith('refs/tags/'))",
            "spec.sourceConfig.buildOnPush must be false when spec.sourceRevisionConfig.repoRef "
            "is a tag (refs/tags/...): a tag never moves",
            field_path=".sourceConfig.buildOnPush",
        ),
    ],
    "writeOutputsTo.configMapName": [
        Rule(
            f"self.matches('{DNS1123_SUBDOMAIN}')",
            "spec.writeOutputsTo.configMapName must be a DNS-1123 subdomain (a ConfigMap "
            "name): lowercase letters, digits, '-' and '.', starting and ending with a "
            "letter or digit, e.g. 'support-bot-outputs'",
        ),
    ],
    RESOURCES: [
        *(
            at_most(RESOURCES, low, high, "a minimum above its maximum")
            for low, high in _SCALE_BOUNDS
        ),
        *(
            at_most(RESOURCES, request, limit, "a request above its limit: no pod may have it")
            for request, limit in _REQUESTS_AND_LIMITS
        ),
    ],
    "sourceConfig": [
        Rule(
            "!(has(self.listenerRef) && has(self.listenerId))",
            "spec.sourceConfig.listenerRef and spec.sourceConfig.listenerId are mutually "
            "exclusive: set one of them",
            field_path=".listenerRef",
        ),
        Rule(
            "!has(self.repository) || has(self.integrationId)",
            "spec.sourceConfig.integrationId is required when spec.sourceConfig.repository is "
            "set (the repository is looked up in that integration)",
            field_path=".integrationId",
            reason=REQUIRED,
        ),
    ],
}


KIND: Final = KindDef(
    kind="AgentDeployment",
    plural="agentdeployments",
    short_names=("agd", "agentdep"),
    description=(
        "An agent-server deployment on the control plane, kept in sync with this spec "
        "(created, updated with new revisions, deleted per deletionPolicy)."
    ),
    spec_model=AgentDeploymentSpec,
    status_model=AgentDeploymentStatus,
    noun="deployment",
    rules=RULES,
    object_rules=OBJECT_RULES,
    printer_columns=printer_columns(
        column("Revision", ".status.revision.status", "Status of the latest revision."),
        column(
            "Environment",
            ".spec.agent.environment",
            "The agent's environment (spec.agent); empty for a deployment by name.",
        ),
        column("URL", ".status.url", "URL of the deployment."),
        column("Agent", ".spec.agent.agentId", "The agent (spec.agent).", priority=1),
        column(
            "Deployment ID",
            ".status.deploymentId",
            "Deployment id on the control plane.",
            priority=1,
        ),
        column(
            "Outputs",
            ".spec.writeOutputsTo.configMapName",
            "The ConfigMap the deployment's outputs are written to (spec.writeOutputsTo).",
            priority=1,
        ),
        connection_column(),
        policy_column(),
        column(
            "Pending",
            ".status.pendingChange.action",
            "updatePolicy Manual: the change waiting for approval (deployplane approve).",
            priority=1,
        ),
    ),
)
