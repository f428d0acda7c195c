"""Whether a Listener may be used from another namespace: the Gateway API's
`allowedRoutes.namespaces` rule (`from: Same | All | Selector`), as a pure function.

A Listener is shared across namespaces only when it says so: by default (`Same`) only
AgentDeployments of its own namespace may name it, so a team cannot run its deployments
on another team's compute by writing a name and a namespace.
"""

from __future__ import annotations

from collections.abc import Mapping

from deployplane.kinds.listener.spec import (
    AllowedNamespaces,
    LabelSelector,
    LabelSelectorRequirement,
    NamespacesFrom,
    SelectorOperator,
)
from deployplane.reconcile.external import DependencyNotReady

LISTENER_NOT_ALLOWED = "ListenerNotAllowed"


class ListenerNotAllowed(DependencyNotReady):
    """The Listener does not admit references from the resource's namespace."""

    reason = LISTENER_NOT_ALLOWED


def refusal(
    allowed: AllowedNamespaces | None,
    listener: str,
    referrer_namespace: str,
    referrer_labels: Mapping[str, str],
) -> str | None:
    """None when the Listener `listener` ("namespace/name") admits a reference from
    `referrer_namespace` (whose labels are `referrer_labels`); else why not, naming the
    rule. A Listener's own namespace is always admitted."""
    listener_namespace = listener.split("/", 1)[0]
    if referrer_namespace == listener_namespace:
        return None
    rule = allowed or AllowedNamespaces()
    if rule.from_ is NamespacesFrom.ALL:
        return None
    if rule.from_ is NamespacesFrom.SELECTOR and rule.selector is not None:
        problem = selector_problem(rule.selector)
        if problem:
            return f"listener {listener}: allowedNamespaces.selector is invalid: {problem}"
        if matches(rule.selector, referrer_labels):
            return None
        return (
            f"listener {listener} allows namespaces matching its allowedNamespaces.selector; "
            f"namespace {referrer_namespace} does not match"
        )
    return (
        f"listener {listener} allows namespaces: Same (its spec.allowedNamespaces); "
        f"namespace {referrer_namespace} is not allowed"
    )


def selector_problem(selector: LabelSelector) -> str | None:
    """Why a selector is invalid as Kubernetes defines it, or None."""
    for requirement in selector.match_expressions or []:
        needs_values = requirement.operator in (SelectorOperator.IN, SelectorOperator.NOT_IN)
        if needs_values != bool(requirement.values):
            wanted = "needs values" if needs_values else "takes no values"
            return f"{requirement.key} {requirement.operator.value} {wanted}"
    return None


def matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: every pair and every requirement; empty: all."""
    if any(labels.get(k) != v for k, v in (selector.match_labels or {}).items()):
        return False
    return all(_requirement(r, labels) for r in selector.match_expressions or [])


def _requirement(requirement: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = requirement.key in labels
    values = requirement.values or []
    match requirement.operator:
        case SelectorOperator.IN:
            return present and labels[requirement.key] in values
        case SelectorOperator.NOT_IN:
            return not present or labels[requirement.key] not in values
        case SelectorOperator.EXISTS:
            return present
        case SelectorOperator.DOES_NOT_EXIST:
            return not present
