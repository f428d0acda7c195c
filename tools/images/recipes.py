"""What the daemonless image build makes, and the pure parts of it: cache keys and
archive names (unit-tested in tests/unit/tools/test_images_recipes.py; the build itself is
tools/images/build.py).

Every image is cached by a key over its inputs: a Debian image by the release, the
packages and hooks of its rootfs and the files of its Containerfile; the project's image
by the Dockerfile, the files its COPY lines take (pyproject.toml, README.md, operator/,
less what .dockerignore drops) and its base's key. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Debian 12, as the official python:3.11-slim; PostgreSQL with pgvector from Debian 13
# (Debian 12 has no pgvector package: Debian packages it since 13, for PostgreSQL 17).
RELEASE = "bookworm"


def mirrors(release: str) -> tuple[str, ...]:
    """The release's main, updates and security archives (deb.debian.org)."""
    return (
        f"deb http://deb.debian.org/debian {release} main",
        f"deb http://deb.debian.org/debian {release}-updates main",
        f"deb http://deb.debian.org/debian-security {release}-security main",
    )


def mmdebstrap_options(release: str) -> tuple[str, ...]:
    """minbase: Essential and Priority required packages (apt included, which the
    Dockerfile's builder stage uses); no Recommends. On bookworm merged /usr comes from
    mmdebstrap's own hook, not from the usrmerge package (which brings perl, 55 MB);
    from trixie on, base-files makes it."""
    merged_usr = ("--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",)
    no_recommends = "--aptopt=APT::Install-Recommends false"
    return ("--variant=minbase", *(merged_usr if release == "bookworm" else ()), no_recommends)


# Documentation, manual pages and translations never make it into a rootfs (the
# copyright files stay: the packages' licences).
DPKG_OPTIONS = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
)
# Bumped when build.py changes how it turns a recipe into an image.
RECIPE_VERSION = "1"
# The one annotation of our own in an archive's index.json: the key it was built from.
KEY_ANNOTATION = "io.deployplane.build-key"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class DebianImage:
    """An image made from Debian packages: an mmdebstrap rootfs (`FROM scratch` + ADD)
    and the Containerfile lines after that; `files` (under tools/images/) are copied
    into its build context."""

    ref: str
    packages: tuple[str, ...]
    containerfile: str
    files: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()  # mmdebstrap --customize-hook commands
    release: str = RELEASE
    also: tuple[str, ...] = ()  # more refs for the same image, in the same archive
    export: bool = True  # written to the images directory (the base is not)


# What the Dockerfile expects of the official python image: python and pip on PATH,
# apt-get, groupadd/useradd. A venv at the front of PATH gives python and pip (Debian's
# own python3 refuses pip installs: PEP 668).
PYTHON_BASE = DebianImage(
    ref="localhost/deployplane-base-python:3.11",
    packages=("python3", "python3-venv", "ca-certificates"),
    containerfile="""\
RUN python3 -m venv /opt/python
ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    LANG=C.UTF-8
CMD ["python3"]
""",
    export=False,
)

# The users and groups PostgreSQL and Redis run as: the data plane renders the same
# (operator/deployplane/dataplane/render/backing.py; a unit test keeps them alike).
# PostgreSQL's is the official image's (999), the owner of the databases that image made;
# Redis's one above 10000, no user of a node. Debian's packages give their system users
# the next free ids; `renumbered` moves them (and their files) to these.
DATABASE_USER = 999
REDIS_USER = 10999


def renumbered(user: str, uid: int) -> str:
    """An mmdebstrap customize hook giving `user` and its group the id `uid`, with the
    files the packages made theirs."""
    return (
        f"chroot \"$1\" sh -ec 'u=$(id -u {user}); g=$(id -g {user}); "
        f"groupmod -g {uid} {user}; usermod -u {uid} -g {uid} {user}; "
        f"find / -xdev -uid \"$u\" -exec chown -h {uid} {{}} +; "
        f"find / -xdev -gid \"$g\" -exec chgrp -h {uid} {{}} +'"
    )


# PostgreSQL 17 with pgvector 0.8 (Debian 13's packages), not the 16 of the agent's
# default pgvector/pgvector:pg16: hence a name of its own (docs/dataplane.md). The entrypoint is
# the subset of the official image's the renderer uses (POSTGRES_PASSWORD, PGDATA, `-c`
# arguments); `pg_isready -U postgres` is the readiness probe. It runs as DATABASE_USER
# on a read-only root: it writes its data directory, `/var/run/postgresql` (its socket
# and lock) and `/tmp`, the data plane's volumes.
POSTGRES = DebianImage(
    ref="docker.io/library/deployplane-postgres:17-pgvector",
    release="trixie",
    packages=("postgresql-17", "postgresql-17-pgvector"),
    hooks=(
        # postgresql-common's postinst makes a `main` cluster the image does not use.
        'rm -rf "$1/etc/postgresql/17/main" "$1/var/lib/postgresql/17/main"',
        renumbered("postgres", DATABASE_USER),
    ),
    files=("postgres-entrypoint.sh",),
    containerfile=f"""\
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN mkdir -p /var/run/postgresql /var/lib/postgresql/data \\
 && chown postgres:postgres /var/run/postgresql /var/lib/postgresql/data \\
 && chmod 3777 /var/run/postgresql && chmod 700 /var/lib/postgresql/data
ENV PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
USER {DATABASE_USER}:{DATABASE_USER}
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
""",
)

# Redis: Debian bookworm ships 7.0, not the 7.4 of the renderer's default redis:7.4-alpine.
# It runs as REDIS_USER on a read-only root, its snapshot in /data (a volume).
REDIS = DebianImage(
    ref="docker.io/library/deployplane-redis:7.0",
    packages=("redis-server",),
    hooks=(renumbered("redis", REDIS_USER),),
    files=("redis-entrypoint.sh",),
    containerfile=f"""\
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER {REDIS_USER}:{REDIS_USER}
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
""",
)

# A stand-in for the agent server, for the data plane's end-to-end tests on a real node
# (the real server's base is AGENT_BASE_REF below): what the rendered pods need of it is
# GET /ok on port 8000 (their probes). Tagged :1 and :2, so that a test can roll an update out
# (DEPLOYPLANE_E2E_AGENT_IMAGE=docker.io/library/deployplane-e2e-agent, docs/kind.md).
E2E_AGENT = DebianImage(
    ref="docker.io/library/deployplane-e2e-agent:1",
    also=("docker.io/library/deployplane-e2e-agent:2",),
    packages=("python3",),
    containerfile="""\
RUN mkdir -p /srv/agent && echo ok >/srv/agent/ok
USER 65534:65534
EXPOSE 8000
CMD ["python3", "-m", "http.server", "8000", "--directory", "/srv/agent"]
""",
)

# The agent servers' base: the Python base above plus the vendor's public
# server `langgraph-api` with its in-memory runtime, `langgraph` and `langgraph-sdk`,
# every wheel pinned in agent-base.txt, downloaded (or built, for an sdist) on the host
# and installed offline (`/wheels` is a read-only mount of the RUN step, in no layer).
# Outbound calls off: tracing off, no version check, no licence or LangSmith key (the
# server then skips its metadata loop). The remote build of the emulator builds every
# uploaded project on it (emulator/builds/imagebuild/).
AGENT_BASE_VERSION = "0.16.7"
AGENT_BASE_REF = f"docker.io/library/deployplane-agent-base:{AGENT_BASE_VERSION}"
AGENT_BASE_REQUIREMENTS = "agent-base.txt"
AGENT_SERVER = "agent-server.py"
AGENT_BASE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_LANGGRAPH_API_VARIANT": "local_dev",
    "PORT": "8000",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
AGENT_BASE_CONTAINERFILE = f"""\
COPY {AGENT_SERVER} /usr/local/bin/deployplane-agent-server
RUN pip install --no-cache-dir --no-index --no-deps --find-links /wheels -r /wheels/{AGENT_BASE_REQUIREMENTS} \\
 && pip check && mkdir -p /deps
ENV {" ".join(f"{k}={v}" for k, v in AGENT_BASE_ENV.items())}
WORKDIR /deps
USER 65534:65534
EXPOSE 8000
CMD ["python3", "/usr/local/bin/deployplane-agent-server"]
"""


def agent_base_key(python_base_key: str, files_dir: Path = HERE) -> str:
    """The agent base's key: the Python base's, the Containerfile, the pinned wheels'
    list and the server's entry script."""
    parts = [
        ("base", python_base_key.encode()),
        ("version", RECIPE_VERSION.encode()),
        ("containerfile", AGENT_BASE_CONTAINERFILE.encode()),
    ]
    parts += [(f"file:{f}", (files_dir / f).read_bytes()) for f in (AGENT_BASE_REQUIREMENTS, AGENT_SERVER)]
    return _digest(parts)


# What the data plane's pods run on a real node.
DATAPLANE = (POSTGRES, REDIS, E2E_AGENT)
APP_REF = "docker.io/library/deployplane:dev"


def normalize(ref: str) -> str:
    """A reference as Docker and containerd spell it in full:
    `deployplane:dev` -> `docker.io/library/deployplane:dev`."""
    name, tag = split_tag(ref)
    first, _, rest = name.partition("/")
    if not rest:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    return f"{name}:{tag}"


def split_tag(ref: str) -> tuple[str, str]:
    """(repository, tag) of a reference; the tag defaults to `latest`."""
    if "@" in ref:
        raise ValueError(f"{ref!r}: a digest reference cannot name a built image")
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return name, tag


def archive_name(ref: str) -> str:
    """The archive's file name in the images directory: the last path element of the
    repository and the tag, `docker.io/library/deployplane:dev` -> `deployplane-dev.tar`."""
    name, tag = split_tag(normalize(ref))
    return f"{name.rsplit('/', 1)[-1]}-{tag}.tar"


def index_annotations(ref: str, key: str) -> dict[str, str]:
    """The annotations of the image's manifest in the archive's index.json, as
    `docker save` writes them: containerd's `ctr images import` names the image by
    io.containerd.image.name; the OCI ref.name is the tag."""
    full = normalize(ref)
    return {
        "io.containerd.image.name": full,
        "org.opencontainers.image.ref.name": split_tag(full)[1],
        KEY_ANNOTATION: key,
    }


def local_ref(image: DebianImage, key: str) -> str:
    """The name of a Debian image in buildah's storage: `localhost/<name>:<key prefix>`."""
    name = split_tag(normalize(image.ref))[0].rsplit("/", 1)[-1]
    return f"localhost/{name}:{key[:16]}"


def _digest(parts: Iterable[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in parts:
        # length-prefixed: no two different inputs hash the same way
        h.update(f"{len(name)}:{name}:{len(data)}:".encode())
        h.update(data)
    return h.hexdigest()


def debian_key(image: DebianImage, files_dir: Path = HERE) -> str:
    """The key of a Debian image: release, mirrors, packages, hooks, dpkg options, the
    Containerfile and the files it copies."""
    recipe = {
        "version": RECIPE_VERSION,
        "release": image.release,
        "mirrors": mirrors(image.release),
        "mmdebstrap": mmdebstrap_options(image.release),
        "dpkg": DPKG_OPTIONS,
        "packages": sorted(image.packages),
        "hooks": image.hooks,
        "containerfile": image.containerfile,
        "ref": image.ref,
    }
    if image.also:  # (only when set: the other images keep their keys)
        recipe["also"] = image.also
    parts = [("recipe", json.dumps(recipe, sort_keys=True).encode())]
    parts += [(f"file:{f}", (files_dir / f).read_bytes()) for f in sorted(image.files)]
    return _digest(parts)


def context_files(root: Path) -> list[Path]:
    """The files the Dockerfile's COPY lines take from the build context: pyproject.toml,
    README.md and operator/, less caches (the patterns of .dockerignore)."""
    skip_dirs = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    files = [root / "pyproject.toml", root / "README.md"]
    for path in sorted((root / "operator").rglob("*")):
        rel = path.relative_to(root)
        cached = skip_dirs & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts)
        if path.is_file() and path.suffix != ".pyc" and not cached:
            files.append(path)
    return files


def app_key(root: Path, base_key: str, build_args: dict[str, str]) -> str:
    """The key of the project's image: Dockerfile, .dockerignore, the context's files,
    the build arguments and the base's key."""
    parts = [
        ("base", base_key.encode()),
        ("args", json.dumps(build_args, sort_keys=True).encode()),
        ("version", RECIPE_VERSION.encode()),
    ]
    for path in [root / "Dockerfile", root / ".dockerignore", *context_files(root)]:
        parts.append((path.relative_to(root).as_posix(), path.read_bytes()))
    return _digest(parts)
