"""The chart's RBAC for `deployplane plan` from CI (`plan.enabled`), rendered by the real
`helm template`: reads and dry-runs of the kinds only, and an admission policy holding
the plan's identities to dry-runs. That the apiserver enforces it is proven in
tests/e2e/test_plan.py."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support import chart
from tests.support.chart import Doc, find, find_all

PLAN = f"{chart.RELEASE}-plan"  # the release's fullname, then -plan
SA_USER = f"system:serviceaccount:{chart.NAMESPACE}:{PLAN}"
KINDS = ["agentdeployments", "controlplaneconnections", "listeners"]


@pytest.fixture(scope="module", autouse=True)
def _helm() -> None:
    chart.require_helm()


def plan_docs(**plan: Any) -> list[Doc]:
    docs = chart.render({"plan": {"enabled": True, **plan}})
    return [d for d in docs if d["metadata"]["name"].startswith(PLAN)]


def test_off_by_default() -> None:
    assert [d for d in chart.render({}) if d["metadata"]["name"].startswith(PLAN)] == []


def test_reads_and_dry_runs_the_kinds_and_nothing_else() -> None:
    docs = plan_docs()
    assert sorted(d["kind"] for d in docs) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    assert find(docs, "ServiceAccount")["metadata"]["namespace"] == chart.NAMESPACE
    dry_runs = ["get", "list", "create", "update"]
    assert find(docs, "ClusterRole")["rules"] == [
        {"apiGroups": ["deployplane.io"], "resources": KINDS, "verbs": dry_runs},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    ]
    assert find(docs, "ClusterRoleBinding")["subjects"] == [
        {"kind": "ServiceAccount", "name": PLAN, "namespace": chart.NAMESPACE}
    ]


def test_the_policy_holds_the_plans_identities_to_dry_runs() -> None:
    more = [{"kind": "Group", "name": "ci-bots"}, {"kind": "User", "name": "gh"}]
    docs = plan_docs(subjects=more)
    policy = find(docs, "ValidatingAdmissionPolicy")["spec"]
    assert policy["failurePolicy"] == "Fail"
    assert policy["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": ["deployplane.io"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["*"],
        }
    ]
    [match] = policy["matchConditions"]
    assert match["expression"] == (
        f'request.userInfo.username in ["{SA_USER}","gh"] || '
        'request.userInfo.groups.exists(g, g in ["ci-bots"])'
    )
    assert [v["expression"] for v in policy["validations"]] == ["request.dryRun == true"]
    binding = find(docs, "ValidatingAdmissionPolicyBinding")["spec"]
    assert binding == {"policyName": f"{PLAN}-dry-run-only", "validationActions": ["Deny"]}
    subjects = find(docs, "ClusterRoleBinding")["subjects"]
    assert subjects[1:] == [
        {"kind": "Group", "name": "ci-bots", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "User", "name": "gh", "apiGroup": "rbac.authorization.k8s.io"},
    ]


def test_namespaces_bind_the_role_in_each_and_secrets_may_stay_unread() -> None:
    docs = plan_docs(namespaces=["team-a", "team-b"], readSecrets=False)
    assert find_all(docs, "ClusterRoleBinding") == []
    bindings = find_all(docs, "RoleBinding")
    assert [b["metadata"]["namespace"] for b in bindings] == ["team-a", "team-b"]
    assert all(b["roleRef"]["kind"] == "ClusterRole" for b in bindings)
    rules = find(docs, "ClusterRole")["rules"]
    assert "secrets" not in {r for rule in rules for r in rule["resources"]}


def test_an_existing_service_account_is_named_not_made() -> None:
    docs = plan_docs(serviceAccount={"create": False, "name": "ci"})
    assert find_all(docs, "ServiceAccount") == []
    assert find(docs, "ClusterRoleBinding")["subjects"][0]["name"] == "ci"


@pytest.mark.parametrize(
    "plan",
    [
        {"subjects": [{"kind": "ServiceAccount", "name": "x"}]},
        {"namespaces": ["Team_A"]},
        {"readSecret": True},
    ],
)
def test_the_schema_refuses_bad_values(plan: dict[str, Any]) -> None:
    assert chart.render_error({"plan": {"enabled": True, **plan}})


EXAMPLE = chart.CHART.parents[1] / "examples" / "gitops" / "plan-ci"


def test_the_examples_values_bind_the_plan_in_the_agents_namespace() -> None:
    import yaml

    values = yaml.safe_load((EXAMPLE / "values.yaml").read_text())
    docs = [d for d in chart.render(values) if d["metadata"]["name"].startswith(PLAN)]
    [binding] = find_all(docs, "RoleBinding")
    assert binding["metadata"]["namespace"] == "agents"
    assert find(docs, "ValidatingAdmissionPolicyBinding")


def test_the_examples_workflow_runs_a_plan_the_cli_takes() -> None:
    """Its `deployplane plan` line parses with the real command (options it has), and
    its exit-code handling lets 2 (changes) through and fails on 1."""
    import shlex

    import click
    import yaml

    from deployplane.cli.commands.plan.command import plan

    workflow = yaml.safe_load((EXAMPLE / "plan.yaml").read_text())
    [script] = [s["run"] for s in workflow["jobs"]["plan"]["steps"] if s.get("id") == "plan"]
    [line] = [line for line in script.splitlines() if line.strip().startswith("deployplane plan")]
    argv = shlex.split(line.split(">")[0])[2:]
    command = plan
    with click.Context(command) as ctx:
        command.parse_args(ctx, list(argv))
    assert ctx.params["output_format"] == "markdown"
    assert 'test "$code" -ne 1' in script
