"""An image archive lands in the shared output directory whole (emulator/builds/imagebuild/
runner.py `write_archive`): written under a temporary name of its own in that
directory, then renamed over the archive, so a reader (the cache check, another
process importing it) sees the old archive or the new one, never a part; a failed
write leaves the old archive and no temporary file."""

from __future__ import annotations

import json
import tarfile
import threading
from pathlib import Path

import pytest

from deployplane.emulator.builds.imagebuild import runner


def layout(path: Path, marker: str) -> Path:
    (path / "blobs" / "sha256").mkdir(parents=True)
    (path / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (path / "index.json").write_text(json.dumps({"manifests": [], "marker": marker}))
    (path / "blobs" / "sha256" / "0").write_text(marker)
    return path


def marker(archive: Path) -> str:
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        return str(json.load(member)["marker"])


def test_the_archive_appears_whole_by_a_rename_of_a_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    archive = out / "deployplane-agent-0123456789abcdef.tar"
    runner.write_archive(layout(tmp_path / "old", "old"), archive)
    renames: list[tuple[Path, Path, str]] = []
    replace = Path.replace

    def observed(self: Path, target: Path) -> Path:
        # at the rename: the whole new archive under its temporary name, the old one intact
        renames.append((self, Path(target), marker(archive)))
        assert marker(self) == "new"
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", observed)
    runner.write_archive(layout(tmp_path / "new", "new"), archive)
    ((part, target, seen),) = renames
    assert target == archive
    assert part.parent == out
    assert part.name.startswith(f".{archive.name}.")
    assert part.name.endswith(".part")
    assert seen == "old"
    assert marker(archive) == "new"
    assert sorted(p.name for p in out.iterdir()) == [archive.name]


def test_two_writers_of_one_archive_at_once_each_land_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one upload write the same archive: the first is held just before
    its rename while the second writes and renames; then the first renames. Each wrote
    its own temporary file, so both land whole and nothing is left over."""
    out = tmp_path / "out"
    archive = out / "deployplane-agent-0123456789abcdef.tar"
    held, go = threading.Event(), threading.Event()
    replace = Path.replace

    def first_waits(self: Path, target: Path) -> Path:
        if threading.current_thread().name == "first":
            held.set()
            go.wait(30)
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", first_waits)
    errors: list[BaseException] = []

    def first() -> None:
        try:
            runner.write_archive(layout(tmp_path / "a", "first"), archive)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=first, name="first")
    thread.start()
    try:
        assert held.wait(30)
        runner.write_archive(layout(tmp_path / "b", "second"), archive)
        assert marker(archive) == "second"
    finally:
        go.set()
        thread.join(30)
    assert errors == []
    assert marker(archive) == "first"
    assert sorted(p.name for p in out.iterdir()) == [archive.name]


def test_a_failed_write_leaves_the_old_archive_and_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    archive = out / "deployplane-agent-0123456789abcdef.tar"
    runner.write_archive(layout(tmp_path / "old", "old"), archive)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "index.json").write_text("{}")  # no oci-layout, no blobs
    with pytest.raises(FileNotFoundError):
        runner.write_archive(broken, archive)
    assert marker(archive) == "old"
    assert sorted(p.name for p in out.iterdir()) == [archive.name]
