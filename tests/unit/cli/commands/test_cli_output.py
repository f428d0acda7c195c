"""The CLI's tables: golden output at 60, 80 and 200 columns, values never split, -o
wide|name, --no-headers, AGE, no trailing spaces, NO_COLOR. Same fake service as
tests/support/cli_service.py; $COLUMNS sets the terminal width."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from click.testing import CliRunner, Result
from tests.support import cli_service
from tests.support.cli_service import (
    DEP_ID,
    REV_ID,
    FakeService,
    deployment,
    listener,
    make_app,
    revision,
)

from deployplane.cli.commands import tables
from deployplane.cli.commands.tables import Col, human_age, render

service = cli_service.service  # the same fake control plane, as a fixture of this module

CREATED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)  # cli_service.NOW
LONG_NAMES = [
    "customer-support-assistant-for-emea-region-v2",
    "a-very-long-deployment-name-that-keeps-going-past-forty",
]
THIRD = "a-long-deployment-name-of-thirty-eight"
IDS = [
    "aaaaaaaa-0000-4000-8000-000000000001",
    "bbbbbbbb-0000-4000-8000-000000000002",
    "cccccccc-0000-4000-8000-000000000003",
]


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "now", lambda: CREATED + timedelta(hours=3, minutes=25))


def run_at(width: int, *args: str, **env: str) -> Result:
    return CliRunner().invoke(make_app(), list(args), env={"COLUMNS": str(width), **env})


def three_deployments(service: FakeService) -> None:
    items = [
        deployment(id=IDS[0], name=LONG_NAMES[0]),
        deployment(
            id=IDS[1],
            name="git-bot",
            status="AWAITING_DATABASE",
            source="git_host",
            source_revision_config={"repo_ref": "main"},
        ),
        deployment(id=IDS[2], name=THIRD, created_at="2024-12-01T00:00:00Z"),
    ]
    service.on("GET", "/v2/deployments", [httpx.Response(200, json={"resources": items})])


DEPLOYMENTS_200 = """\
NAME                                           STATUS             SOURCE           AGE
customer-support-assistant-for-emea-region-v2  READY              external_docker  3h25m
git-bot                                        AWAITING_DATABASE  git_host         3h25m
a-long-deployment-name-of-thirty-eight         READY              external_docker  32d
"""

DEPLOYMENTS_80 = """\
NAME                                           STATUS             AGE
customer-support-assistant-for-emea-region-v2  READY              3h25m
git-bot                                        AWAITING_DATABASE  3h25m
a-long-deployment-name-of-thirty-eight         READY              32d
"""

# At 60 the name and the status alone are wider: the lines run past the width rather
# than split a value.
DEPLOYMENTS_60 = """\
NAME                                           STATUS
customer-support-assistant-for-emea-region-v2  READY
git-bot                                        AWAITING_DATABASE
a-long-deployment-name-of-thirty-eight         READY
"""


@pytest.mark.parametrize(
    ("width", "golden", "note"),
    [
        (200, DEPLOYMENTS_200, ""),
        (80, DEPLOYMENTS_80, "(SOURCE hidden at 80 columns; -o wide shows all)\n"),
        (60, DEPLOYMENTS_60, "(SOURCE, AGE hidden at 60 columns; -o wide shows all)\n"),
    ],
)
def test_deployments_list_golden(service: FakeService, width: int, golden: str, note: str) -> None:
    three_deployments(service)
    result = run_at(width, "deployments", "list")
    assert result.exit_code == 0, result.output
    assert result.stdout == golden
    assert result.stderr == note


def test_deployments_list_wide_has_every_column_whole(service: FakeService) -> None:
    three_deployments(service)
    result = run_at(80, "deployments", "list", "-o", "wide")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split("  ")[0] == "NAME"
    for title in ("ID", "IMAGE / REF", "LATEST REVISION", "ACTIVE REVISION", "AGE"):
        assert title in header
    assert len(rows) == 3  # one line per deployment: nothing folded
    for row, deployment_id in zip(rows, IDS, strict=True):
        assert deployment_id in row
        assert row.count(REV_ID) == 2
    assert "main" in rows[1]
    assert result.stderr == ""


def test_no_headers_and_name_output(service: FakeService) -> None:
    three_deployments(service)
    bare = run_at(200, "deployments", "list", "--no-headers")
    assert bare.stdout == DEPLOYMENTS_200.split("\n", 1)[1]
    names = run_at(80, "deployments", "list", "-o", "name")
    assert names.stdout == (f"deployment/{LONG_NAMES[0]}\ndeployment/git-bot\ndeployment/{THIRD}\n")


REVISIONS_80 = f"""\
ACTIVE  ID                                    STATUS    AGE
        {IDS[0]}  BUILDING  3h25m
*       {REV_ID}  DEPLOYED  3h25m
"""


def test_revisions_list_golden_marks_the_active_one(service: FakeService) -> None:
    building = {**revision("BUILDING"), "id": IDS[0]}
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=deployment())])
    service.on(
        "GET",
        f"/v2/deployments/{DEP_ID}/revisions",
        [httpx.Response(200, json={"resources": [building, revision()]})],
    )
    result = run_at(80, "revisions", "list", DEP_ID)
    assert result.exit_code == 0, result.output
    assert result.stdout == REVISIONS_80
    narrow = run_at(60, "revisions", "list", DEP_ID)
    assert narrow.stdout == "".join(
        line[:-7].rstrip() + "\n" for line in REVISIONS_80.splitlines(True)
    )


LISTENERS_80 = """\
COMPUTE ID                                        TYPE  NAMESPACES     AGE
production-cluster-in-eu-west-1-with-a-long-name  k8s   team-a,team-b  3h25m
"""

LISTENERS_60 = """\
COMPUTE ID                                        AGE
production-cluster-in-eu-west-1-with-a-long-name  3h25m
"""


def test_listeners_list_golden(service: FakeService) -> None:
    long = listener(
        compute_id="production-cluster-in-eu-west-1-with-a-long-name",
        compute_config={"k8s_namespaces": ["team-a", "team-b"]},
    )
    service.on("GET", "/v2/listeners", [httpx.Response(200, json={"resources": [long]})])
    assert run_at(200, "listeners", "list").stdout == LISTENERS_80
    assert run_at(80, "listeners", "list").stdout == LISTENERS_80
    result = run_at(60, "listeners", "list")
    assert result.stdout == LISTENERS_60
    assert result.stderr == "(TYPE, NAMESPACES hidden at 60 columns; -o wide shows all)\n"


@pytest.mark.parametrize("width", [60, 80, 200])
def test_no_line_has_trailing_spaces_and_no_value_is_split(
    service: FakeService, width: int
) -> None:
    three_deployments(service)
    for fmt in ("table", "wide"):
        result = run_at(width, "deployments", "list", "-o", fmt)
        lines = result.stdout.splitlines()
        assert all(line == line.rstrip() for line in lines)
        for name in (LONG_NAMES[0], THIRD, "git-bot"):
            assert sum(name in line for line in lines) == 1


def test_deployments_get_shows_nested_fields_as_indented_yaml_without_nulls(
    service: FakeService,
) -> None:
    body = deployment(
        name=LONG_NAMES[1],
        source_config={"listener_id": None, "resource_spec": {"min_scale": 1, "cpu": None}},
        source_revision_config={"image_uri": "img:1", "repo_ref": None},
        secrets=[{"name": "OPENAI_API_KEY"}],
    )
    service.on("GET", f"/v2/deployments/{DEP_ID}", [httpx.Response(200, json=body)])
    result = run_at(80, "deployments", "get", DEP_ID)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80, "\n" + result.stdout
    assert all(line == line.rstrip() for line in lines)
    assert "{" not in result.stdout, result.stdout
    assert "null" not in result.stdout
    assert "None" not in result.stdout
    text = result.stdout
    nested = re.search(r"resource_spec:\n(\s+)min_scale: 1", text)
    assert nested, text
    assert re.search(r"source_revision_config\s+image_uri: img:1", text), text
    assert re.search(r"secrets\s+- name: OPENAI_API_KEY", text), text
    assert any(LONG_NAMES[1] in line for line in lines)


def test_headers_are_bold_on_a_terminal_unless_no_color(
    service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tables, "use_color", lambda stream: True)
    three_deployments(service)
    colored = run_at(200, "deployments", "list")
    assert colored.stdout.startswith("\x1b[1mNAME")
    monkeypatch.undo()
    monkeypatch.setattr(tables, "now", lambda: CREATED)

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("NO_COLOR", "1")
    assert not tables.use_color(Tty())  # type: ignore[arg-type]
    monkeypatch.delenv("NO_COLOR")
    assert tables.use_color(Tty())  # type: ignore[arg-type]
    plain = run_at(200, "deployments", "list")
    assert "\x1b" not in plain.stdout  # not a terminal


@pytest.mark.parametrize(
    ("seconds", "age"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 25 * 60, "3h25m"),
        (9 * 3600, "9h"),
        (50 * 3600, "2d2h"),
        (32 * 86400, "32d"),
        (3 * 365 * 86400 + 5 * 86400, "3y5d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_age_is_kubectls(seconds: int, age: str) -> None:
    assert human_age(CREATED, CREATED + timedelta(seconds=seconds)) == age


def test_render_drops_whole_columns_by_rank_and_never_a_kept_one() -> None:
    columns = [Col("NAME"), Col("EXTRA", drop=1), Col("ID", wide=True)]
    rows = [["n" * 70, "x" * 10, "i" * 36]]
    narrow = render(columns, rows, 60)
    assert narrow.lines == ["NAME", "n" * 70]
    assert narrow.hidden == ["EXTRA"]
    wide = render(columns, rows, 60, wide=True)
    assert wide.lines[1] == "n" * 70 + "  " + "x" * 10 + "  " + "i" * 36


def test_o_name_of_get_is_kind_slash_name(service: FakeService) -> None:
    service.on("GET", f"/v2/listeners/{cli_service.LIS_ID}", [httpx.Response(200, json=listener())])
    result = run_at(80, "listeners", "get", cli_service.LIS_ID, "-o", "name")
    assert result.stdout == "listener/cluster-a\n"
