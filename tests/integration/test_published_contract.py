"""Schemathesis 4 on the service's PUBLISHED OpenAPI against the emulator (issue 35).

The document is tests/support/published-contract.json (a copy of
shared/spec/published-contract.json; `tests.support.published` adds the one documented
fact it predates, `deployment_type: dev_zero`). Schemathesis generates every operation's
cases from it (its examples, coverage and fuzzing phases, positive and negative), sends
them in-process over ASGI to the emulator app, with the workspace's API key, in strict
mode (the published contract and nothing else) and in its default mode (where the one
extension on a published path, the listener PUT, is excused), and runs its default
checks on each answer:
`response_schema_conformance`, `status_code_conformance`, `content_type_conformance`,
`negative_data_rejection`, `positive_data_acceptance`, `not_a_server_error`, ...

A run on a fresh database would reach little but 404s, so each operation's app is
seeded with a deployment (secrets, secret references, a revision) and a listener, and
half the cases (chosen from the case's own data, so a replay picks the same) aim at
those: GET, list, PATCH and redeploy answer real deployments, whose `secrets` items
must have the published `Secret` shape.

Every finding fails the test, except those listed in `excused` with the reason why.

Not here: Schemathesis's state machine (`as_state_machine()`, the stateful checks
`use_after_free` and `ensure_resource_availability`). Against a server whose state
carries over from one example to the next (a name taken, a listener made), hypothesis
stops its runs with FlakyStrategyDefinition, as docs/reliability.md found under
Schemathesis 3; the seeds above give every operation real resources instead, and the
emulator's chains of operations are fuzzed in test_controlplane_reliability.py.
"""

from __future__ import annotations

import copy
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.python import asgi
from tests.support.emulator_app import KEY_A, make_settings
from tests.support.published import CONTRACT

from deployplane.emulator.web.app import create_app

AUTH = {"X-Api-Key": KEY_A}
MAX_EXAMPLES = 50
# The path parameters that name what the seed made.
SEEDED = ("deployment_id", "revision_id", "listener_id")
SEED_SECRET_VALUE = "sk-seeded-value"
SEED_DEPLOYMENT = {
    "name": "seeded",
    "source": "external_docker",
    "source_config": {"resource_spec": {"min_scale": 1}},
    "source_revision_config": {"image_uri": "registry.example.com/app:1"},
    "secrets": [{"name": "OPENAI_API_KEY", "value": SEED_SECRET_VALUE}],
    "secret_references": [{"name": "TOKEN", "secret_name": "llm", "secret_key": "token"}],
}
SEED_LISTENER = {
    "compute_type": "k8s",
    "compute_id": "seeded",
    "compute_config": {},
    "version": "1",
}


def _seed(app: Any) -> dict[str, str]:
    """A deployment with secrets (and its first revision) and a listener, made through
    the API on the app's own loop (Schemathesis's ASGI client runs the lifespan)."""
    with asgi.get_client(app) as client:
        client.headers.update(AUTH)
        created = client.post("/v2/deployments", json=SEED_DEPLOYMENT)
        assert created.status_code == 201, created.text
        listener = client.post("/v2/listeners", json=SEED_LISTENER)
        assert listener.status_code == 201, listener.text
    return {
        "deployment_id": created.json()["id"],
        "revision_id": created.json()["latest_revision_id"],
        "listener_id": listener.json()["id"],
    }


@pytest.fixture
def seeds() -> dict[str, str]:
    return {}


def _bound(database_url: str, seeds: dict[str, str], *, strict: bool) -> Iterator[Any]:
    app = create_app(make_settings(database_url, step_seconds=0.01, strict=strict))
    schema = schemathesis.openapi.from_dict(copy.deepcopy(CONTRACT))
    schema.app = app
    seeds.update(_seed(app))
    yield schema
    asgi.shutdown_lifespans()


@pytest.fixture
def published(database_url: str, seeds: dict[str, str]) -> Iterator[Any]:
    """The published document, bound to a fresh strict emulator app. Schemathesis's
    pytest plugin ends the app's lifespan when the test ends."""
    yield from _bound(database_url, seeds, strict=True)


@pytest.fixture
def published_default(database_url: str, seeds: dict[str, str]) -> Iterator[Any]:
    """The same, on the emulator as it runs by default (extensions on)."""
    yield from _bound(database_url, seeds, strict=False)


schema = schemathesis.pytest.from_fixture("published")
default_schema = schemathesis.pytest.from_fixture("published_default")


def _aim_at_seeds(case: Case, seeds: dict[str, str]) -> None:
    """Half the positive cases with ids of their own name the seeded resources (a
    DELETE never does, so the rest of the run still has them)."""
    names = [name for name in SEEDED if name in case.path_parameters]
    if not names or case.method == "DELETE" or case.meta is None:
        return
    if case.meta.generation.mode.value != "positive":
        return
    if zlib.crc32(repr(sorted(case.path_parameters.items())).encode()) % 2:
        return
    for name in names:
        case.path_parameters[name] = seeds[name]


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _failures(error: Failure | FailureGroup) -> list[Failure]:
    return list(error.exceptions) if isinstance(error, FailureGroup) else [error]


# The service's rules the published schemas do not carry (no minLength, no format, no
# rule per `source`), each documented in docs/emulator.md ("Validation", "Request body
# limits"): a schema-valid value they refuse is a 422 naming the field, never a breach.
# (message pattern, why the emulator may refuse what the schema allows)
CONTRACT_SILENT: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"^String should have at least 1 character$"),
        "an empty name, compute_id or secret reference field names nothing (names are "
        "Kubernetes object names); the schemas set no minLength",
    ),
    (
        re.compile(r"NUL character \(U\+0000\)"),
        "U+0000 in text: PostgreSQL text cannot hold it; the schemas are silent",
    ),
    (
        re.compile(r"^integer out of range \(-2\^63 \.\. 2\^63-1\)$"),
        "an integer beyond 64 bits (here in an unknown field): no database integer holds it",
    ),
    (
        re.compile(
            r"is not allowed for source |is not for external_docker|"
            r"^Field required for source |is external_docker only|"
            r"^revision_source \w+ is not allowed for source "
        ),
        "the fields of another source: the contract says source_config is validated "
        "according to `source` (control-plane-api.md), the schema does not say how",
    ),
    (
        re.compile(r"^unknown (listener|git-host integration) in this workspace$"),
        "a listener_id or integration_id naming nothing in the workspace: like a 404 "
        "for an unknown id, the schema cannot know the workspace's ids",
    ),
    (
        re.compile(r"^Input should be greater than or equal to 0$"),
        "a negative replica count, size in MB or GiB, or connection count: the published "
        "integers of resource_spec carry no minimum, a Kubernetes object refuses them",
    ),
    (re.compile(r"^duplicate secret name$"), "secret names are unique (environment variables)"),
    (
        re.compile(r"^build_on_push must be false when repo_ref is a tag$"),
        "a rule of the contract's own text (control-plane-api.md, rule 2)",
    ),
    (
        re.compile(r"cannot be changed( after creation)?$|^custom_url is set by the service"),
        "what cannot change after creation, or what the service sets (read-only)",
    ),
    (
        re.compile(r"^not an upload of this deployment"),
        "a source_tarball_path naming no upload of the deployment: an unknown id",
    ),
    (
        re.compile(r"lone UTF-16 surrogates|^nested deeper than \d+ levels"),
        "text no database can store faithfully, or nesting past what serialisers handle",
    ),
    (
        re.compile(r"^must be a comma-separated list of UUIDs$"),
        "deployment_ids filters by id: a value that is not a list of ids filters nothing",
    ),
    (re.compile(r"^not a valid image reference"), "an image no registry could pull"),
    (re.compile(r"^not a valid git ref"), "a repo_ref git refuses (check-ref-format)"),
]
# The 400s the contract documents (POST, PATCH, redeploy) for what the state of the
# workspace refuses, whatever the body: a schema cannot promise those are accepted.
STATE_REFUSALS = re.compile(
    r"with this name already exists|is being deleted|cannot be redeployed|"
    r"is not a repository of git-host integration"
)
# The published Volume copies Kubernetes' shape without its one required field: a
# volume without a `name` can be neither mounted nor rendered.
_VOLUME_NAME = re.compile(r"^volumes/\d+/name$")


def _refusal_reason(error: dict[str, Any]) -> str | None:
    loc = "/".join(str(part) for part in error.get("loc", [])[-3:])
    if error.get("type") == "missing" and _VOLUME_NAME.match(loc):
        return "a Kubernetes volume needs its name"
    msg = str(error.get("msg", ""))
    return next((why for pattern, why in CONTRACT_SILENT if pattern.search(msg)), None)


# The emulator's extension on a published path (docs/emulator.md), served outside
# strict mode: PUT answers on the listener's path, and its 405s name it in `Allow`.
EXTENSION_PATHS = {"/v2/listeners/{listener_id}": "PUT"}


def excused(
    failure: Failure, status: int, body: Any, *, extension_of: str | None = None
) -> str | None:
    """Why a finding is not the emulator breaking the contract, or None (a breach).
    `extension_of`: the method an extension serves on the case's path, if any."""
    if extension_of and failure.code in ("ST204", "ST205") and extension_of in failure.message:
        return f"{extension_of} is an emulator extension on this path (off in strict mode)"
    detail = body.get("detail") if isinstance(body, dict) else None
    if status == 404 and failure.code == "ST103" and "not found" in str(detail).lower():
        # The contract documents no 404 for the repository listing and the OAuth
        # provider, yet an integration or provider that does not exist can only be
        # answered "not found".
        return "404 for an unknown id"
    if status == 400 and failure.code == "ST202" and STATE_REFUSALS.search(str(detail)):
        return "refused for the workspace's state (a name taken, a deployment being deleted)"
    if status == 422 and failure.code == "ST202" and isinstance(detail, list) and detail:
        reasons = [_refusal_reason(error) for error in detail]
        if all(reasons):
            return "; ".join(sorted({str(reason) for reason in reasons}))
    return None


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_the_emulator_keeps_the_published_contract(case: Case, seeds: dict[str, str]) -> None:
    _aim_at_seeds(case, seeds)
    response = case.call(headers=AUTH)
    assert SEED_SECRET_VALUE not in response.text  # the mask, never the value
    try:
        case.validate_response(response, headers=AUTH)
    except (Failure, FailureGroup) as error:
        _raise_breaches(error, case, response)


@default_schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES // 2,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_the_default_mode_keeps_the_published_contract(case: Case, seeds: dict[str, str]) -> None:
    """Outside strict mode the extensions answer too (docs/emulator.md): the published
    operations keep the contract all the same."""
    _aim_at_seeds(case, seeds)
    response = case.call(headers=AUTH)
    assert SEED_SECRET_VALUE not in response.text
    try:
        case.validate_response(response, headers=AUTH)
    except (Failure, FailureGroup) as error:
        _raise_breaches(error, case, response, extension_of=EXTENSION_PATHS.get(case.path))


def _raise_breaches(
    error: Failure | FailureGroup, case: Case, response: Any, extension_of: str | None = None
) -> None:
    """Fails naming every finding that is not excused, with a curl to replay it."""
    body = _json(response)
    breaches = [
        f"{failure.code} {failure.title}: {failure.message}"
        for failure in _failures(error)
        if excused(failure, response.status_code, body, extension_of=extension_of) is None
    ]
    if breaches:
        curl = case.as_curl_command(headers=AUTH)
        report = [*breaches, f"[{response.status_code}] {curl}"]
        raise AssertionError("\n".join(report)) from None


def test_only_the_listed_findings_are_excused() -> None:
    """The exclusions stay as narrow as documented: a schema violation, a 404 that is
    not "not found", a refusal for a reason not listed are all breaches."""

    class Undocumented(Failure):
        code = "ST103"

    class Rejected(Failure):
        code = "ST202"

    class Violates(Failure):
        code = "ST108"

    def finding(kind: type[Failure]) -> Failure:
        return kind(operation="GET /v2/deployments", message="-")

    not_found = {"detail": "Deployment ID x not found."}
    assert excused(finding(Undocumented), 404, not_found) == "404 for an unknown id"
    assert excused(finding(Undocumented), 404, {"detail": "gone"}) is None
    assert excused(finding(Undocumented), 400, not_found) is None
    assert excused(finding(Violates), 404, not_found) is None
    refused = {"detail": [{"loc": ["body", "name"], "msg": "duplicate secret name"}]}
    assert excused(finding(Rejected), 422, refused) is not None
    assert excused(finding(Violates), 200, refused) is None
    other = {"loc": ["query", "offset"], "msg": "Input should be less than or equal to 9"}
    assert excused(finding(Rejected), 422, {"detail": [other]}) is None
    assert excused(finding(Rejected), 422, {"detail": [other, *refused["detail"]]}) is None

    class Undeclared(Failure):
        code = "ST204"

    put = Undeclared(operation="PUT /v2/listeners/{listener_id}", message="PUT returned 422")
    assert excused(put, 422, None, extension_of="PUT") is not None
    assert excused(put, 422, None) is None  # strict mode: PUT must be a 405
    taken = {"detail": "A deployment or tracing project with this name already exists."}
    assert excused(finding(Rejected), 400, taken) is not None
    assert excused(finding(Rejected), 400, {"detail": "Refused."}) is None
    volume = {"loc": ["body", "source_config", "resource_spec", "volumes", 0, "name"]}
    assert excused(finding(Rejected), 422, {"detail": [{**volume, "type": "missing"}]})


def test_the_copy_is_the_published_document() -> None:
    """tests/support/published-contract.json is a copy of shared/spec's, which lies
    beside the repository where the spec is shared (CI): they must not drift apart."""
    root = Path(__file__).resolve().parents[2]
    shared = root.parent / "shared" / "spec" / "published-contract.json"
    if not shared.exists():
        pytest.skip(f"no {shared} beside this checkout")
    copy_ = root / "tests" / "support" / "published-contract.json"
    assert json.loads(copy_.read_text()) == json.loads(shared.read_text())
