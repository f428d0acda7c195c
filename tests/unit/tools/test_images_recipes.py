"""The pure parts of the daemonless image build (tools/images/recipes.py): reference
normalization, archive names and index annotations, and the cache keys (what changes
them and what does not)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.support.image_recipes import recipes

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("ref", "full"),
    [
        ("deployplane:dev", "docker.io/library/deployplane:dev"),
        ("deployplane", "docker.io/library/deployplane:latest"),
        ("pgvector/pgvector:pg16", "docker.io/pgvector/pgvector:pg16"),
        ("ghcr.io/deployplane/deployplane:0.1.0", "ghcr.io/deployplane/deployplane:0.1.0"),
        ("localhost:5000/x/y:1", "localhost:5000/x/y:1"),
        ("localhost/deployplane-base-python:abc", "localhost/deployplane-base-python:abc"),
        ("docker.io/library/deployplane:dev", "docker.io/library/deployplane:dev"),
    ],
)
def test_normalize_spells_references_as_docker_and_containerd_do(ref: str, full: str) -> None:
    assert recipes.normalize(ref) == full


def test_a_digest_cannot_name_a_built_image() -> None:
    with pytest.raises(ValueError, match="digest"):
        recipes.normalize("deployplane@sha256:" + "0" * 64)


def test_archive_names_are_stable_and_distinct() -> None:
    assert recipes.archive_name(recipes.APP_REF) == "deployplane-dev.tar"
    assert recipes.archive_name("deployplane:dev") == "deployplane-dev.tar"
    assert recipes.archive_name("localhost:5000/team/agent:2") == "agent-2.tar"
    names = [recipes.archive_name(i.ref) for i in recipes.DATAPLANE]
    assert names == [
        "deployplane-postgres-17-pgvector.tar",
        "deployplane-redis-7.0.tar",
        "deployplane-e2e-agent-1.tar",
    ]
    assert len({*names, "deployplane-dev.tar"}) == 4


def test_index_annotations_name_the_image_for_ctr_import() -> None:
    annotations = recipes.index_annotations("deployplane:dev", "k" * 64)
    assert annotations == {
        # ctr images import names the image by this one, as after `docker save`
        "io.containerd.image.name": "docker.io/library/deployplane:dev",
        "org.opencontainers.image.ref.name": "dev",
        recipes.KEY_ANNOTATION: "k" * 64,
    }


def test_the_app_image_is_the_one_docs_kind_md_names() -> None:
    assert recipes.normalize("deployplane:dev") == recipes.APP_REF
    assert "deployplane:dev" in (ROOT / "docs/kind.md").read_text()


# ---------------------------------------------------------------- cache keys


def test_debian_key_follows_packages_containerfile_and_files(tmp_path: Path) -> None:
    for name in recipes.POSTGRES.files:
        shutil.copy(recipes.HERE / name, tmp_path / name)
    key = recipes.debian_key(recipes.POSTGRES, tmp_path)
    assert key == recipes.debian_key(recipes.POSTGRES, tmp_path)  # deterministic
    assert key == recipes.debian_key(recipes.POSTGRES)  # the same files as tools/images/
    # the package order does not matter; the set does
    reordered = recipes.DebianImage(
        **{**vars(recipes.POSTGRES), "packages": ("postgresql-17-pgvector", "postgresql-17")}
    )
    assert recipes.debian_key(reordered, tmp_path) == key
    more = recipes.DebianImage(
        **{**vars(recipes.POSTGRES), "packages": (*recipes.POSTGRES.packages, "curl")}
    )
    assert recipes.debian_key(more, tmp_path) != key
    edited = recipes.DebianImage(**{**vars(recipes.POSTGRES), "containerfile": "USER 1\n"})
    assert recipes.debian_key(edited, tmp_path) != key
    (tmp_path / recipes.POSTGRES.files[0]).write_text("#!/bin/sh\nexec postgres\n")
    assert recipes.debian_key(recipes.POSTGRES, tmp_path) != key
    keys = {recipes.debian_key(i) for i in (recipes.PYTHON_BASE, *recipes.DATAPLANE)}
    assert len(keys) == 4
    # the stand-in's second tag is part of its key
    one_tag = recipes.DebianImage(**{**vars(recipes.E2E_AGENT), "also": ()})
    assert recipes.debian_key(one_tag) != recipes.debian_key(recipes.E2E_AGENT)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "operator/deployplane").mkdir(parents=True)
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        (root / name).write_text(name)
    (root / "operator/deployplane/cli.py").write_text("print()")
    return root


def test_app_key_follows_what_the_build_copies(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    args = {"BASE_IMAGE": "localhost/base:1"}
    key = recipes.app_key(root, "b" * 64, args)
    assert key == recipes.app_key(root, "b" * 64, args)
    # what the build does not see leaves the key alone: caches, egg-info, other dirs
    (root / "operator/deployplane/__pycache__").mkdir()
    (root / "operator/deployplane/__pycache__/cli.cpython-311.pyc").write_bytes(b"x")
    (root / "operator/deployplane.egg-info").mkdir()
    (root / "operator/deployplane.egg-info/PKG-INFO").write_text("x")
    (root / "tests").mkdir()
    (root / "tests/test_x.py").write_text("x")
    assert recipes.app_key(root, "b" * 64, args) == key
    # what it sees changes it
    assert recipes.app_key(root, "c" * 64, args) != key
    assert recipes.app_key(root, "b" * 64, {"BASE_IMAGE": "localhost/base:2"}) != key
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        (root / name).write_text(name + "!")
        assert recipes.app_key(root, "b" * 64, args) != key, name
        (root / name).write_text(name)
    assert recipes.app_key(root, "b" * 64, args) == key
    (root / "operator/deployplane/new.py").write_text("")
    assert recipes.app_key(root, "b" * 64, args) != key


def test_context_files_match_the_dockerignore() -> None:
    # .dockerignore lets in pyproject.toml, README.md and operator/ only: the key covers
    # the same files, so an edit elsewhere in the repo is a cache hit.
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert {line for line in ignore if line.startswith("!")} == {
        "!pyproject.toml",
        "!README.md",
        "!operator/",
    }
    files = recipes.context_files(ROOT)
    rel = {f.relative_to(ROOT).as_posix() for f in files}
    assert {"pyproject.toml", "README.md", "operator/deployplane/cli/root.py"} <= rel
    assert all(r in ("pyproject.toml", "README.md") or r.startswith("operator/") for r in rel)
    assert not any("__pycache__" in r or ".egg-info" in r for r in rel)


def test_the_emulator_reads_the_agent_base_where_the_build_writes_it() -> None:
    from deployplane.emulator.settings import ImageBuildConfig

    default = ImageBuildConfig().base_archive
    assert default.name == recipes.archive_name(recipes.AGENT_BASE_REF)
    assert default.parent.name == "images"


def test_the_agent_base_key_follows_its_pins_its_server_and_its_base(tmp_path: Path) -> None:
    for name in (recipes.AGENT_BASE_REQUIREMENTS, recipes.AGENT_SERVER):
        shutil.copy(recipes.HERE / name, tmp_path / name)
    key = recipes.agent_base_key("base-1", tmp_path)
    assert key == recipes.agent_base_key("base-1", tmp_path)
    assert key != recipes.agent_base_key("base-2", tmp_path)
    pins = tmp_path / recipes.AGENT_BASE_REQUIREMENTS
    pins.write_text(pins.read_text().replace("langgraph-api==0.16.7", "langgraph-api==0.16.8"))
    assert key != recipes.agent_base_key("base-1", tmp_path)


def test_the_agent_base_pins_the_vendors_server_and_turns_outbound_calls_off() -> None:
    text = (recipes.HERE / recipes.AGENT_BASE_REQUIREMENTS).read_text()
    pins = [line for line in text.splitlines() if line and not line.startswith("#")]
    for pin in ("langgraph-api==0.16.7", "langgraph-runtime-inmem==0.36.7"):
        assert pin in pins
    assert all("==" in pin for pin in pins)  # every wheel pinned, dependencies too
    env = recipes.AGENT_BASE_ENV
    assert env["LANGSMITH_TRACING"] == env["LANGCHAIN_TRACING_V2"] == "false"
    assert env["LANGGRAPH_NO_VERSION_CHECK"] == "true"
    assert not {"LANGSMITH_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY"} & set(env)


def test_postgres_and_redis_run_as_the_users_the_data_plane_renders() -> None:
    """The pods say `runAsUser` (render/backing.py) and PostgreSQL's initdb needs its
    user in /etc/passwd: the images renumber their packages' users to those."""
    from deployplane.dataplane.render.backing import DATABASE_USER, REDIS_USER

    assert (recipes.DATABASE_USER, recipes.REDIS_USER) == (DATABASE_USER, REDIS_USER)
    for image, user, uid in (
        (recipes.POSTGRES, "postgres", DATABASE_USER),
        (recipes.REDIS, "redis", REDIS_USER),
    ):
        assert f"USER {uid}:{uid}\n" in image.containerfile
        assert recipes.renumbered(user, uid) in image.hooks
