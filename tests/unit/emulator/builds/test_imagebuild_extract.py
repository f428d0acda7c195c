"""Unpacking an upload onto disk (emulator/builds/imagebuild/extract.py) with hostile
archives: path traversal, an absolute path, a symlink to /etc, a link pointing out, a
hard link out, a device file, a 1 GiB bomb. Each is refused with its reason and writes
nothing outside the build's own directory; setuid bits are cleared; as root the
unpacking runs as nobody."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from deployplane.emulator.builds.imagebuild.extract import (
    UNPRIVILEGED,
    UnsafeArchive,
    extract,
    extract_unprivileged,
)

Member = Callable[[tarfile.TarFile], None]


def regular(name: str, data: bytes = b"x", mode: int = 0o644) -> Member:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))

    return add


def link(name: str, target: str, kind: bytes) -> Member:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        tar.addfile(info)

    return add


def archive(path: Path, *members: Member) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            member(tar)
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """(the build's directory to unpack into, a directory beside it that must stay empty)"""
    dest, outside = tmp_path / "build" / "src", tmp_path / "outside"
    dest.mkdir(parents=True)
    outside.mkdir()
    if os.geteuid() == 0:
        os.chown(dest, UNPRIVILEGED, UNPRIVILEGED)
    return dest, outside


def everything(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


HOSTILE = [
    ("traversal", [regular("ok.py"), regular("../outside/evil.py")],
     "archive member '../outside/evil.py' is outside the project"),
    ("absolute", [regular("/tmp/evil.py")], "archive member '/tmp/evil.py' has an absolute path"),
    ("symlink to /etc", [link("etc", "/etc", tarfile.SYMTYPE)],
     "archive member 'etc' is a link to an absolute path"),
    ("symlink out", [link("up", "../../outside", tarfile.SYMTYPE)],
     "archive member 'up' is a link pointing out of the project"),
    ("hard link out", [link("passwd", "../outside/target", tarfile.LNKTYPE)],
     "archive member 'passwd' is a link pointing out of the project"),
    ("device", [link("null", "", tarfile.CHRTYPE)],
     "archive member 'null' is a device or special file"),
]  # fmt: skip


@pytest.mark.parametrize("unprivileged", [False, True], ids=["in-process", "as-nobody"])
@pytest.mark.parametrize(("what", "members", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_archives_are_refused_and_write_nothing_outside(
    dirs: tuple[Path, Path], tmp_path: Path, what: str, members: list[Member], reason: str,
    unprivileged: bool,
) -> None:  # fmt: skip
    dest, outside = dirs
    (outside / "target").write_text("secret")
    tarball = archive(tmp_path / "upload.tar.gz", *members)
    with pytest.raises(UnsafeArchive) as caught:
        (extract_unprivileged if unprivileged else extract)(tarball, dest)
    assert str(caught.value) == reason
    assert everything(outside) == {"target"}
    assert (outside / "target").read_text() == "secret"
    assert everything(tmp_path / "build") <= {"src", "src/ok.py"}


def test_a_member_over_the_limit_is_refused_on_its_header(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    """The header says 1 GiB + 1 (the data is cut short: the size decides first; the
    whole 1 GiB bomb is tests/integration/test_imagebuild.py's)."""
    dest, outside = dirs
    path = tmp_path / "bomb.tar.gz"
    with gzip.open(path, "wb") as raw:
        info = tarfile.TarInfo("zeros.bin")
        info.size = (1 << 30) + 1
        raw.write(info.tobuf(format=tarfile.GNU_FORMAT) + bytes(1 << 20))
    with pytest.raises(UnsafeArchive, match=r"^archive unpacks to more than 1 GiB$"):
        extract_unprivileged(path, dest)
    assert everything(dest) == set()
    assert everything(outside) == set()


def test_not_a_tarball(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    path = tmp_path / "junk.tar.gz"
    path.write_bytes(b"not gzip")
    with pytest.raises(UnsafeArchive, match=r"^source archive is not a readable gzip tarball"):
        extract_unprivileged(path, dirs[0])


def test_a_project_unpacks_without_setuid_bits_and_as_nobody(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    dest, _ = dirs
    tarball = archive(
        tmp_path / "ok.tar.gz",
        regular("langgraph.json", b"{}"),
        regular("bin/tool", b"#!/bin/sh\n", mode=0o6777),
        link("lib", "bin", tarfile.SYMTYPE),  # a link inside the tree is fine
    )
    assert extract_unprivileged(tarball, dest) == 3
    assert everything(dest) == {"langgraph.json", "bin", "bin/tool", "lib"}
    mode = (dest / "bin" / "tool").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH)
    if os.geteuid() == 0:
        assert (dest / "langgraph.json").stat().st_uid == UNPRIVILEGED
