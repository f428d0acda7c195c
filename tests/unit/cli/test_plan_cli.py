"""`deployplane plan` and `deployplane approve`, without a cluster: the rows rendered
(golden table, JSON, markdown), the input read (files, directories, kustomizations,
stdin), the control-plane client that refuses to write, the refusals, the exit codes, and
what `approve` will and will not approve. What the rows say against the operator's
passes is proven in tests/integration/test_plan_emulator.py, and on a real apiserver in
tests/e2e/test_plan.py."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from deployplane.api.connection import ConnectionSettings
from deployplane.cli.commands import approve as approve_command
from deployplane.cli.commands.approve import ApprovalError, approved_generation
from deployplane.cli.commands.plan import command as plan_command
from deployplane.cli.commands.plan import planner, readonly, render
from deployplane.cli.commands.plan.manifests import (
    InputError,
    read_documents,
    secret_data,
    sort_documents,
)
from deployplane.cli.commands.plan.rows import (
    ERROR,
    HELD,
    REFUSED,
    Row,
    exit_code,
    refusal_row,
    summary,
)
from deployplane.cli.commands.tables import render as render_table
from deployplane.cli.root import root as root_app

AGD = "AgentDeployment"
IMAGE, GRAPH = "sourceRevisionConfig.imageUri", "sourceRevisionConfig.graphConfigPath"
DELETES = "deletes its deployment on the control plane (deletionPolicy Delete)"
ROWS = [
    Row(AGD, "demo", "bot", "new-revision", ("image",), (IMAGE,)),
    Row(AGD, "demo", "git-bot", "rebuild", ("config",), (GRAPH,)),
    Row(AGD, "demo", "sized", "update", (), ("sourceConfig.resourceSpec",)),
    Row(AGD, "demo", "fresh", "create", (HELD,)),
    Row("Listener", "demo", "edge", "none"),
    Row(
        AGD,
        "demo",
        "bad",
        REFUSED,
        ('Invalid value: "object": minScale above maxScale | <b>',),
        ("spec.sourceConfig.resourceSpec",),
    ),
    Row(AGD, "demo", "old", "delete", (DELETES,)),
]


def table(rows: Sequence[Row], width: int | None, wide: bool = False) -> list[str]:
    return render_table(render.COLUMNS, render.table_rows(rows), width, wide=wide).lines


def test_golden_table_at_200_and_80_columns() -> None:
    assert table(ROWS, 200) == [
        "RESOURCE                 NAMESPACE  ACTION        WHY        FIELDS",
        "agentdeployment/bot      demo       new-revision  image      " + IMAGE,
        "agentdeployment/git-bot  demo       rebuild       config     " + GRAPH,
        "agentdeployment/sized    demo       update        -          sourceConfig.resourceSpec",
        "agentdeployment/fresh    demo       create        see below  -",
        "listener/edge            demo       none          -          -",
        "agentdeployment/bad      demo       refused       see below  "
        "spec.sourceConfig.resourceSpec",
        "agentdeployment/old      demo       delete        see below  -",
    ]
    narrow = table(ROWS, 80)
    assert narrow[0].split() == ["RESOURCE", "ACTION", "WHY"]
    assert all(len(line) <= 80 for line in narrow)
    assert table(ROWS, 80, wide=True) == table(ROWS, 200)
    assert render.explained(ROWS) == [
        "agentdeployment/fresh create: awaits approval (updatePolicy Manual)",
        'agentdeployment/bad refused: spec.sourceConfig.resourceSpec: Invalid value: "object": '
        "minScale above maxScale | <b>",
        "agentdeployment/old delete: deletes its deployment on the control plane "
        "(deletionPolicy Delete)",
    ]


def test_json_is_items_of_kind_namespace_name_action_reasons_fields() -> None:
    items = json.loads(render.as_json(ROWS[:1]))["items"]
    assert items == [
        {
            "kind": "AgentDeployment",
            "namespace": "demo",
            "name": "bot",
            "action": "new-revision",
            "reasons": ["image"],
            "fields": ["sourceRevisionConfig.imageUri"],
        }
    ]


def test_markdown_is_a_pull_request_comment_with_the_unchanged_folded() -> None:
    text = render.as_markdown(ROWS)
    lines = text.splitlines()
    assert lines[:3] == [
        "#### deployplane plan",
        "",
        "**1 to create, 1 new revision, 1 rebuild, 1 update, 1 to delete, 1 unchanged, 1 refused**",
    ]
    assert (
        "| AgentDeployment/bot | demo | **new-revision** | image | "
        "`sourceRevisionConfig.imageUri` |"
    ) in lines
    # A refusal: its field and message in one cell, never breaking the table or the page.
    assert (
        "| AgentDeployment/bad | demo | **refused** | `spec.sourceConfig.resourceSpec`: "
        'Invalid value: "object": minScale above maxScale \\| &lt;b> |  |'
    ) in lines
    folded = lines.index("<details><summary>1 unchanged</summary>")
    assert "| Listener/edge | demo | none |  |  |" in lines[folded:]
    assert lines[-1] == "</details>"
    assert "<details>" not in render.as_markdown(ROWS[:1])


def test_exit_codes_are_terraform_plans_detailed_ones() -> None:
    none = Row("Listener", "demo", "edge", "none")
    assert exit_code([]) == 0
    assert exit_code([none]) == 0
    assert exit_code([none, ROWS[0]]) == 2
    assert exit_code([ROWS[0], Row("Listener", "demo", "x", ERROR, ("unreachable",))]) == 1
    assert exit_code(ROWS) == 1  # a refusal among changes
    assert summary([]) == "no resources"


def test_a_refusal_reads_the_apiservers_causes_field_by_field() -> None:
    status = {
        "kind": "Status",
        "message": 'AgentDeployment.deployplane.io "x" is invalid: [...]',
        "details": {
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.source",
                },
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "object": a\n b',
                    "field": "spec",
                },
            ]
        },
    }
    row = refusal_row("AgentDeployment", "ns", "x", status)
    assert (row.action, row.fields) == (REFUSED, ("spec.source", "spec"))
    assert row.reasons == ("Required value", 'Invalid value: "object": a b')
    bare = refusal_row("AgentDeployment", "ns", "x", {"kind": "Status", "message": "no"})
    assert (bare.reasons, bare.fields) == (("no",), ())


# ---------------------------------------------------------------------------- input


DOC = """\
apiVersion: deployplane.io/v1alpha1
kind: AgentDeployment
metadata: {name: bot}
spec: {source: external_docker}
"""
LISTENER_DOC = """\
apiVersion: deployplane.io/v1alpha1
kind: Listener
metadata: {name: edge, namespace: shared}
spec: {computeType: k8s, computeId: c1}
"""
SECRET_DOC = """\
apiVersion: v1
kind: Secret
metadata: {name: keys}
data: {a: YWFh}
stringData: {b: bbb}
"""
OTHER_DOC = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
PLURALS = {"AgentDeployment": "agentdeployments", "Listener": "listeners"}


def no_kustomize(directory: Path) -> str:
    raise AssertionError(f"kustomize called for {directory}")


def test_a_file_a_directory_and_stdin(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    one.write_text(f"{DOC}---\n{OTHER_DOC}")
    (tmp_path / "two.yml").write_text(LISTENER_DOC)
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deeper.yaml").write_text("not: [read")
    assert len(read_documents(str(one), io.StringIO(), no_kustomize)) == 2
    docs = read_documents(str(tmp_path), io.StringIO(), no_kustomize)
    assert [d["kind"] for d in docs] == ["AgentDeployment", "ConfigMap", "Listener"]
    piped = read_documents("-", io.StringIO(LISTENER_DOC), no_kustomize)
    assert [d["metadata"]["name"] for d in piped] == ["edge"]


def test_a_kustomization_is_built_by_kustomize(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [bot.yaml]\n")
    built: list[Path] = []

    def kustomize(directory: Path) -> str:
        built.append(directory)
        return f"apiVersion: v1\nkind: List\nitems:\n- {json.dumps(sort_keys(DOC))}\n"

    docs = read_documents(str(tmp_path), io.StringIO(), kustomize)
    assert built == [tmp_path]
    assert [d["kind"] for d in docs] == ["AgentDeployment"]


def sort_keys(doc: str) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load(doc)
    return loaded


NO_END = "expected ',' or ']', but got '<stream end>'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [b", f"stdin is not valid YAML: line 1, column 6: {NO_END}"),
        ("- a\n- b\n", "stdin: a document is not an object"),
    ],
)
def test_bad_input_is_one_line_naming_where(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        read_documents("-", io.StringIO(text), no_kustomize)
    assert str(caught.value) == message


def test_a_missing_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.yaml: no such file or directory$"):
        read_documents(str(tmp_path / "nope.yaml"), io.StringIO(), no_kustomize)


def test_kinds_get_their_namespace_and_secrets_their_values() -> None:
    import yaml

    docs = [yaml.safe_load(d) for d in (DOC, LISTENER_DOC, SECRET_DOC, OTHER_DOC)]
    made = sort_documents(docs, "demo", PLURALS)
    assert [(m.kind, m.namespace, m.name) for m in made] == [
        ("AgentDeployment", "demo", "bot"),
        ("Listener", "shared", "edge"),
    ]
    assert made.resources[0].body["metadata"]["namespace"] == "demo"
    assert made.secrets == {("demo", "keys"): {"a": "aaa", "b": "bbb"}}
    assert secret_data({"data": {"a": "not base64!"}, "stringData": {"a": "x"}}) == {"a": "x"}
    with pytest.raises(InputError, match=r"a Listener has no metadata\.name"):
        sort_documents([{**docs[1], "metadata": {}}], "demo", PLURALS)


# ------------------------------------------------------------ the control plane


async def test_the_plans_client_sends_reads_and_refuses_anything_else() -> None:
    sent: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, request.url.path))
        return httpx.Response(200, json={"resources": [], "offset": 0})

    mock = httpx.MockTransport(answer)
    settings = ConnectionSettings("http://cp.example", "key")
    transport = readonly.ReadOnlyTransport(mock)
    async with settings.client(transport=transport, max_retries=0) as client:
        await client.list_deployments(limit=1)
        with pytest.raises(readonly.PlanWouldWrite, match=r"no DELETE /v2/deployments/d1"):
            await client.delete_deployment("d1")
        with pytest.raises(readonly.PlanWouldWrite, match=r"no POST /v2/deployments/d1/rev"):
            await client.redeploy_revision("d1", "r1")
    logs = httpx.Request("POST", "http://cp.example/v1/projects/p1/revisions/r1/build_logs")
    await transport.handle_async_request(logs)  # a read the API makes a POST
    assert sent == [("GET", "/v2/deployments"), ("POST", logs.url.path)]


# ---------------------------------------------------------------------- command


class FakeKubeAccess:
    namespace = "from-context"


def run_plan(monkeypatch: pytest.MonkeyPatch, rows: list[Row], *args: str, stdin: str = DOC) -> Any:
    planned: list[Any] = []

    async def fake_plan(made: planner.Planner, **options: Any) -> list[Row]:
        planned.append((made.manifests, options))
        await made.connections.aclose()
        return rows

    monkeypatch.setattr(planner, "plan", fake_plan)
    monkeypatch.setattr(
        "deployplane.cli.commands.kube.KubeAccess.load", lambda *_: FakeKubeAccess()
    )
    monkeypatch.setattr(planner.Planner, "_index", lambda self: {})
    monkeypatch.delenv("DEPLOYPLANE_CONTROL_PLANE_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(root_app, ["plan", "-f", "-", *args], input=stdin)
    return result, planned


@pytest.mark.parametrize(
    ("rows", "code"),
    [([], 0), ([Row("Listener", "n", "e", "none")], 0), (ROWS[:1], 2), (ROWS, 1)],
)
def test_the_command_exits_as_the_rows_say(
    monkeypatch: pytest.MonkeyPatch, rows: list[Row], code: int
) -> None:
    result, planned = run_plan(monkeypatch, rows)
    assert result.exit_code == code, result.output
    [(manifests, options)] = planned
    assert [(m.namespace, m.name) for m in manifests] == [("from-context", "bot")]
    assert options == {"prune": False, "namespaces": ["from-context"], "selector": None}


def test_the_command_prints_json_and_markdown(monkeypatch: pytest.MonkeyPatch) -> None:
    result, planned = run_plan(monkeypatch, ROWS[:2], "-o", "json", "-n", "team", "--prune")
    assert json.loads(result.stdout) == json.loads(render.as_json(ROWS[:2]))
    assert planned[0][1] == {"prune": True, "namespaces": ["team"], "selector": None}
    result, _ = run_plan(monkeypatch, ROWS[:2], "-o", "markdown")
    assert result.stdout == render.as_markdown(ROWS[:2]) + "\n"
    result, _ = run_plan(monkeypatch, ROWS)
    assert result.stdout.splitlines()[0].split()[:3] == ["RESOURCE", "NAMESPACE", "ACTION"]
    assert "Plan: 1 to create, 1 new revision" in result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["-o", "yaml"], DOC, "Error: Invalid value for '--output' / '-o': 'yaml' is not one of"),
        (["--bogus"], DOC, "Error: No such option '--bogus'."),
        ([], "a: [b", "error: stdin is not valid YAML"),
    ],
)
def test_every_failure_exits_1_never_2(
    monkeypatch: pytest.MonkeyPatch, args: list[str], stdin: str, message: str
) -> None:
    """2 means "changes" to a CI job: a usage error or bad input must not read as one."""
    result, _ = run_plan(monkeypatch, [], *args, stdin=stdin)
    assert result.exit_code == 1
    assert message in result.output
    missing = CliRunner().invoke(root_app, ["plan"])
    assert missing.exit_code == 1
    assert "Missing option '--file' / '-f'" in missing.output


def test_an_unexpected_error_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(options: plan_command.PlanOptions) -> list[Row]:
        raise KeyError("oops")

    monkeypatch.setattr(plan_command, "run", broken)
    result = CliRunner().invoke(root_app, ["plan", "-f", "-"], input=DOC)
    assert (result.exit_code, result.output) == (1, "error: unexpected KeyError: 'oops'\n")


# ---------------------------------------------------------------------- approve


def agd(generation: int, pending: int | None, policy: str = "Manual") -> dict[str, Any]:
    status: dict[str, Any] = {}
    if pending is not None:
        status["pendingChange"] = {
            "generation": pending,
            "action": "new-revision",
            "reasons": ["image"],
            "fields": ["sourceRevisionConfig.imageUri"],
        }
    return {
        "metadata": {"name": "bot", "generation": generation, "resourceVersion": "9"},
        "spec": {"updatePolicy": policy},
        "status": status,
    }


BOT = "agentdeployment bot"
NO_NEED = "its changes need no approval"
NOT_YET = "the operator has not planned the newest edit yet; run again in a moment"


def test_approve_takes_the_pending_generation() -> None:
    generation, change = approved_generation(agd(3, 3))
    assert (generation, change.action, change.reasons) == (3, "new-revision", ["image"])


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (agd(2, None, "Automatic"), f"{BOT} has updatePolicy Automatic: {NO_NEED}"),
        (agd(2, None), f"{BOT} has no change waiting for approval"),
        (
            agd(4, 3),
            f"{BOT} is at generation 4 and its pending change is generation 3's: {NOT_YET}",
        ),
    ],
)
def test_approve_refuses_what_it_cannot_approve(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ApprovalError) as caught:
        approved_generation(obj)
    assert str(caught.value) == message


def test_approve_annotates_under_the_resource_version_read(monkeypatch: pytest.MonkeyPatch) -> None:
    patched: list[Any] = []

    class Access:
        namespace = "ctx-ns"
        api = None

        def custom_resource(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
            assert (plural, namespace, name) == ("agentdeployments", "team", "bot")
            return agd(3, 3)

    class Custom:
        def __init__(self, api: Any) -> None: ...

        def patch_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> None:
            patched.append((args, kwargs["_content_type"]))

    monkeypatch.setattr("deployplane.cli.commands.kube.KubeAccess.load", lambda *_: Access())
    monkeypatch.setattr("kubernetes.client.CustomObjectsApi", Custom)
    line = approve_command.run("bot", "team", None, None)
    assert line == (
        "agentdeployment/bot approved: generation 3, new-revision (image) of "
        "sourceRevisionConfig.imageUri"
    )
    [(args, content_type)] = patched
    assert args[-1] == {
        "metadata": {
            "resourceVersion": "9",
            "annotations": {"deployplane.io/approved-generation": "3"},
        }
    }
    assert content_type == "application/merge-patch+json"
