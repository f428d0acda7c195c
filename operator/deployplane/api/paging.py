"""Following a list operation's pages: the published `offset` from page to page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from deployplane.api.transport import ModelT

if TYPE_CHECKING:
    from deployplane.api.models import Page

__all__ = ["paginate"]


async def paginate(
    fetch: Callable[[int | None], Awaitable[Page[ModelT]]], page_size: int
) -> AsyncIterator[ModelT]:
    """Follow `offset` from page to page until the last one.

    The published body always carries an integer `offset`: where the next page starts.
    A page shorter than `page_size` (or empty) is the last; an offset that does not
    advance past the items seen ends the walk too, so a service that echoes the
    request's offset instead still cannot make this loop forever.
    """
    offset: int | None = None
    while True:
        page = await fetch(offset)
        for item in page.resources:
            yield item
        here = offset or 0
        following = here + len(page.resources) if page.offset is None else page.offset
        if len(page.resources) < page_size or following <= here:
            return
        offset = following
