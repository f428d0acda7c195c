"""Archives kept by key (tools/images/build.py `keep`, `cached`): checkouts of other code
on one machine build other keys under one archive name; each archive is also kept as
images/by-key/<name>-<key>.tar, so a checkout's archive overwritten by another's build
is put back by a rename, not built again, and the last three keys of a name stay."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """tools/images/build.py on an images directory of the test's own."""
    monkeypatch.syspath_prepend(str(ROOT / "tools/images"))
    spec = importlib.util.spec_from_file_location("images_build", ROOT / "tools/images/build.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "IMAGES", tmp_path / "images")
    monkeypatch.setattr(module, "KEYED", tmp_path / "images" / "by-key")
    return module


WRITES = iter(range(1_767_225_600, 1_767_225_600 + 10_000, 60))


def write(build: ModuleType, out: Path, key: str) -> None:
    """An archive of `key` written over `out` as `export` writes one, then kept; each
    write a minute after the one before (the kept archives go oldest first)."""
    index = {"manifests": [{"annotations": {build.recipes.KEY_ANNOTATION: key}}]}
    data = json.dumps(index).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_suffix(".part")
    with tarfile.open(part, "w") as tar:
        info = tarfile.TarInfo("index.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    when = next(WRITES)
    os.utime(part, (when, when))
    part.replace(out)
    build.keep(out, key)


KEY_A, KEY_B, KEY_C = ("a" * 64, "b" * 64, "c" * 64)


def test_an_archive_overwritten_by_another_checkouts_is_put_back_from_its_key(
    build: ModuleType,
) -> None:
    out = build.IMAGES / "deployplane-agent-base-0.16.7.tar"
    write(build, out, KEY_A)
    kept_a = build.keyed(out, KEY_A)
    assert kept_a.name == f"deployplane-agent-base-0.16.7-{'a' * 16}.tar"
    assert kept_a.samefile(out)
    write(build, out, KEY_B)  # another checkout's build
    assert build.archive_key(out) == KEY_B
    assert build.cached(out, KEY_A)  # this checkout's again: no build
    assert build.archive_key(out) == KEY_A
    assert out.samefile(kept_a)
    assert build.archive_key(build.keyed(out, KEY_B)) == KEY_B  # the other's stays kept
    assert not build.cached(out, KEY_C)  # never built: a miss
    assert build.archive_key(out) == KEY_A


def test_an_archive_built_before_keys_were_kept_is_kept_at_its_first_hit(
    build: ModuleType,
) -> None:
    out = build.IMAGES / "deployplane-dev.tar"
    write(build, out, KEY_A)
    build.keyed(out, KEY_A).unlink()
    assert build.cached(out, KEY_A)
    assert build.keyed(out, KEY_A).samefile(out)


def test_the_last_three_keys_of_a_name_are_kept(build: ModuleType) -> None:
    out = build.IMAGES / "deployplane-dev.tar"
    other = build.IMAGES / "deployplane-redis-7.0.tar"
    write(build, other, KEY_A)
    keys = [str(n) * 64 for n in range(1, 6)]
    for key in keys:
        write(build, out, key)
    kept = sorted(p.name for p in build.KEYED.iterdir())
    assert kept == sorted(
        [build.keyed(out, key).name for key in keys[-3:]] + [build.keyed(other, KEY_A).name]
    )
