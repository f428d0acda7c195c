"""What `plan -f PATH` reads: Kubernetes manifests from a file, a directory, a
kustomization or stdin, sorted into what the plan is about.

- a file: its YAML or JSON documents (`---`), a `List` expanded;
- a directory with a kustomization (`kustomization.yaml`, `.yml`, `Kustomization`):
  `kubectl kustomize DIR`, kustomize's own rules (as Argo CD and Flux build one);
- any other directory: its `.yaml`, `.yml` and `.json` files, in name order, not
  descending (as `kubectl apply -f DIR`);
- `-`: stdin (`helm template ... | deployplane plan -f -`).

Of the documents, this project's kinds are planned; Secrets are what the cluster will
hold once applied (their values count for the deployments' secret digests, as the
operator's would, and are never printed); everything else is not the plan's business.
"""

from __future__ import annotations

import base64
import binascii
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

from deployplane.kube.paths import GROUP

__all__ = ["InputError", "Manifest", "Manifests", "read_documents", "sort_documents"]

KUSTOMIZATION_FILES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUFFIXES: Final = (".yaml", ".yml", ".json")
KUSTOMIZE_TIMEOUT: Final = 120


class InputError(Exception):
    """The input cannot be read as manifests: one line, naming where."""


@dataclass(frozen=True)
class Manifest:
    """A document of one of this project's kinds."""

    kind: str
    namespace: str
    name: str
    body: dict[str, Any]


@dataclass
class Manifests:
    """The documents the plan is about, each in its namespace."""

    resources: list[Manifest] = field(default_factory=list)
    secrets: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    """(namespace, name) -> a Secret's decoded data, as applying it would make it."""

    def has(self, kind: str, namespace: str, name: str) -> bool:
        return any((m.kind, m.namespace, m.name) == (kind, namespace, name) for m in self)

    def find(self, kind: str, namespace: str, name: str) -> Manifest | None:
        return next(
            (m for m in self if (m.kind, m.namespace, m.name) == (kind, namespace, name)), None
        )

    def __iter__(self) -> Iterator[Manifest]:
        return iter(self.resources)


Kustomize = Callable[[Path], str]


def read_documents(path: str, stdin: TextIO, kustomize: Kustomize) -> list[dict[str, Any]]:
    """The documents at `path` (see the module's docstring)."""
    if path == "-":
        return parse(stdin.read(), "stdin")
    where = Path(path)
    if where.is_dir():
        if any((where / name).is_file() for name in KUSTOMIZATION_FILES):
            return parse(kustomize(where), f"the kustomization {path}")
        files = sorted(f for f in where.iterdir() if f.is_file() and f.suffix in SUFFIXES)
        return [doc for f in files for doc in parse(_read(f), str(f))]
    if not where.is_file():
        raise InputError(f"{path}: no such file or directory")
    return parse(_read(where), path)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc


def parse(text: str, where: str) -> list[dict[str, Any]]:
    """The documents of a YAML (or JSON) stream; a `List` is its items."""
    try:
        loaded = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f": line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise InputError(f"{where} is not valid YAML{at}: {problem}") from None
    documents: list[dict[str, Any]] = []
    for doc in loaded:
        if not isinstance(doc, dict):
            raise InputError(f"{where}: a document is not an object")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            documents += [item for item in doc["items"] if isinstance(item, dict)]
        else:
            documents.append(doc)
    return documents


def kubectl_kustomize(kubectl: str) -> Kustomize:
    """Builds a kustomization with `kubectl kustomize` (kustomize's own rules)."""

    def build(directory: Path) -> str:
        try:
            done = subprocess.run(
                [kubectl, "kustomize", str(directory)],
                capture_output=True,
                text=True,
                timeout=KUSTOMIZE_TIMEOUT,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"kubectl kustomize {directory}: {exc}") from exc
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise InputError(f"kubectl kustomize {directory}: {lines[-1] if lines else 'failed'}")
        return done.stdout

    return build


def sort_documents(
    documents: list[dict[str, Any]], default_namespace: str, kinds: Mapping[str, str]
) -> Manifests:
    """The documents of this project's kinds (`kinds`: kind -> plural) and the Secrets,
    each in its namespace (the document's, else `default_namespace`)."""
    out = Manifests()
    for doc in documents:
        meta = doc.get("metadata") or {}
        kind, name = str(doc.get("kind", "")), meta.get("name")
        group = str(doc.get("apiVersion", "")).partition("/")[0]
        namespace = str(meta.get("namespace") or default_namespace)
        if group == GROUP and kind in kinds:
            if not name:
                raise InputError(f"a {kind} has no metadata.name")
            body = {**doc, "metadata": {**meta, "namespace": namespace}}
            out.resources.append(Manifest(kind, namespace, str(name), body))
        elif doc.get("apiVersion") == "v1" and kind == "Secret" and name:
            out.secrets[(namespace, str(name))] = secret_data(doc)
    return out


def secret_data(doc: Mapping[str, Any]) -> dict[str, str]:
    """A Secret manifest's values as the apiserver would store them (stringData over
    data, as the apiserver merges them)."""
    data: dict[str, str] = {}
    for key, value in (doc.get("data") or {}).items():
        try:
            data[str(key)] = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            continue  # the apiserver refuses it; the plan does not plan Secrets
    data.update({str(k): str(v) for k, v in (doc.get("stringData") or {}).items()})
    return data
