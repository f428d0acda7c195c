"""Unpacking an uploaded source tarball onto disk, safely: the one place the remote
build writes what a user sent.

`tarfile`'s `data` filter (PEP 706) refuses absolute paths, `..`, links (symbolic or
hard) that point out of the tree and device files, and clears setuid/setgid and
group/other write bits; on top of it the archive's size and member limits of
`tarballcheck` hold before anything is written (a member's size is in its header, so a
bomb is refused before its bytes are read). The builder runs it
in a child process that is an unprivileged user when the emulator runs as root
(`extract_unprivileged`), which opens the archive and enters `dest` first.
"""

from __future__ import annotations

import gzip  # noqa: F401 (imported before a fork: the child imports nothing)
import os
import tarfile
from pathlib import Path
from typing import BinaryIO

from deployplane.emulator.builds.tarballcheck import MAX_MEMBERS, MAX_UNPACKED_BYTES

__all__ = ["UNPRIVILEGED", "UnsafeArchive", "extract", "extract_unprivileged"]

REFUSED = 3  # the child's exit status for a refused archive
UNPRIVILEGED = 65534  # nobody


class UnsafeArchive(Exception):
    """The archive cannot be unpacked safely; the message says why (no path of ours)."""


def _checked(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members, once the limits hold for all of them (nothing written yet)."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        if member.name.startswith("/"):  # the filter would strip the slash: refused instead
            raise UnsafeArchive(f"archive member {member.name!r} has an absolute path")
        members.append(member)
        if len(members) > MAX_MEMBERS:
            raise UnsafeArchive(f"archive has more than {MAX_MEMBERS} members")
        total += max(member.size, 0)
        if total > MAX_UNPACKED_BYTES:
            raise UnsafeArchive("archive unpacks to more than 1 GiB")
    return members


def extract(archive: Path | BinaryIO, dest: Path) -> int:
    """Unpacks the gzip tarball `archive` into the existing directory `dest`; returns the
    number of members. Raises `UnsafeArchive` with the reason (nothing is written for an
    archive over the limits; a member the filter refuses stops the extraction there,
    inside `dest`)."""
    try:
        source = {"name": archive} if isinstance(archive, Path) else {"fileobj": archive}
        with tarfile.open(mode="r:gz", **source) as tar:
            members = _checked(tar)
            for member in members:
                try:
                    tar.extract(member, dest, filter="data")
                except tarfile.FilterError as exc:
                    raise UnsafeArchive(_reason(member, exc)) from None
    except (tarfile.ReadError, tarfile.CompressionError, EOFError, OSError) as exc:
        raise UnsafeArchive(
            f"source archive is not a readable gzip tarball ({type(exc).__name__})"
        ) from None
    return len(members)


def _reason(member: tarfile.TarInfo, exc: tarfile.FilterError) -> str:
    """Why the filter refused `member`, in the build log's words."""
    what = {
        tarfile.AbsolutePathError: "has an absolute path",
        tarfile.OutsideDestinationError: "is outside the project",
        tarfile.SpecialFileError: "is a device or special file",
        tarfile.AbsoluteLinkError: "is a link to an absolute path",
        tarfile.LinkOutsideDestinationError: "is a link pointing out of the project",
    }
    for kind, words in what.items():
        if isinstance(exc, kind):
            return f"archive member {member.name!r} {words}"
    return f"archive member {member.name!r} cannot be extracted safely"


def extract_unprivileged(archive: Path, dest: Path) -> int:
    """`extract` in a child process that, when we are root, first becomes the
    unprivileged user (`dest` must be writable by it): a member the checks miss still
    cannot write where that user cannot. Forked, not executed: the emulator's
    interpreter may live where that user cannot read."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            os.close(read_end)
            # Opened as we are, then unpacked relative to `dest` as the unprivileged
            # user (who may not be able to traverse the directories above it).
            source = archive.open("rb")
            os.chdir(dest)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(UNPRIVILEGED)
                os.setuid(UNPRIVILEGED)
            try:
                message, status = f"{extract(source, Path('.'))}", 0
            except UnsafeArchive as exc:
                message, status = str(exc), REFUSED
            os.write(write_end, message.encode()[:4096])
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    if code == 0:
        return int(message)
    raise UnsafeArchive(message if code == REFUSED else "cannot unpack the source archive")
