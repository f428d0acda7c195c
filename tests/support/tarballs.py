"""A source tarball as `langgraph deploy` uploads it: gzip tar of the given files."""

from __future__ import annotations

import io
import tarfile

__all__ = ["tarball"]


def tarball(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
