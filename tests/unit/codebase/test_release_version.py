"""One version for a release, everywhere a release names it: the package (pyproject.toml,
and `deployplane --version` through `deployplane.__version__`), the chart's `version` and
`appVersion`, the kustomize base's images, the docs' `?ref=v<version>` references, and a
section of CHANGELOG.md. Cutting a release changes them together, or this fails."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import deployplane

ROOT = Path(__file__).resolve().parents[3]
IMAGE = "ghcr.io/deployplane/deployplane"


def version() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: str = project["version"]
    return found


def test_the_package_reports_the_version_of_pyproject() -> None:
    assert deployplane.__version__ == version()


def test_the_chart_is_versioned_with_the_package() -> None:
    chart = yaml.safe_load((ROOT / "charts" / "deployplane" / "Chart.yaml").read_text())
    assert chart["version"] == version()
    assert chart["appVersion"] == version()  # the image tag when `image.tag` is empty


def test_the_kustomize_base_runs_the_image_of_the_version() -> None:
    images = []
    for path in sorted((ROOT / "manifests").rglob("*.yaml")):
        images += re.findall(rf"image:\s*({re.escape(IMAGE)}\S*)", path.read_text())
    assert images, "no image of the project in manifests/"
    assert set(images) == {f"{IMAGE}:{version()}"}


def test_the_docs_refer_to_the_tag_of_the_version() -> None:
    refs = {
        (path.name, ref)
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for ref in re.findall(r"\?ref=(v[0-9][^\s`)]*)", path.read_text())
    }
    assert refs, "no ?ref= in the docs"
    assert {ref for _, ref in refs} == {f"v{version()}"}, sorted(refs)


def test_the_changelog_has_a_section_for_the_version() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    releases = [h for h in headings if h != "Unreleased" and not re.match(r"\d{4}-", h)]
    assert releases, headings
    assert releases[0] == version(), f"the newest release section is {releases[0]}"
