"""Container image references by the grammar registries and `docker pull` use.

The grammar is `distribution/reference` (reference.go, the one docker, containerd and
every OCI registry client parse with):

    reference   := name [ ":" tag ] [ "@" digest ]
    name        := [domain "/"] path-component ["/" path-component]*
    domain      := host [":" port-number]
    host        := domain-name | IPv4address | "[" IPv6address "]"
    path-component := alpha-numeric [separator alpha-numeric]*   (lowercase)
    separator   := /[_.]|__|[-]+/
    tag         := /[\\w][\\w.-]{0,127}/
    digest      := algorithm ":" hex (at least 32 hex digits)

and a name is at most 255 characters. A reference outside it can never be pulled, so
both the CLI (before any request) and the emulator (422) refuse it. A pure function
without dependencies: the operator, the CLI and the emulator share it.
"""

from __future__ import annotations

import re

__all__ = ["NAME_TOTAL_MAX_LENGTH", "image_reference_error"]

NAME_TOTAL_MAX_LENGTH = 255

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*"
_IPV6 = r"\[[a-fA-F0-9:]+\]"
_DOMAIN = rf"(?:{_DOMAIN_NAME}|{_IPV6})(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?", re.ASCII)
_NAME_ONLY = re.compile(_NAME, re.ASCII)


def image_reference_error(reference: str) -> str | None:
    """Why `reference` is not a pullable image reference; None when it is one.

    The reason names the rule broken, never echoes the value."""
    if not reference:
        return "must not be empty"
    match = _REFERENCE.fullmatch(reference)
    if match is None:
        return _reason(reference)
    if len(match.group("name")) > NAME_TOTAL_MAX_LENGTH:
        return f"the repository name must be at most {NAME_TOTAL_MAX_LENGTH} characters"
    return None


def _reason(reference: str) -> str:
    # The most useful single reason, checked from the outside in.
    if any(c.isspace() for c in reference):
        return "must not contain whitespace"
    if not reference.isascii():
        return "must be ASCII"
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    if "@" in reference and not re.fullmatch(_DIGEST, reference.split("@", 1)[1], re.ASCII):
        return "the digest must be ALGORITHM:HEX (at least 32 hex digits)"
    if _NAME_ONLY.fullmatch(name) is None:
        return (
            "the repository name must be lowercase letters, digits and . _ - separators, "
            "optionally after a registry host[:port]/"
        )
    return "the tag must be letters, digits, _ . or - (at most 128, not starting with . or -)"
