"""The environment variables that name a control plane and its credentials.

The operator's default connection, the CLI and the listener agent read the same three
(`deployplane.api.connection` builds a client of them). Plain strings, importable at no
cost: every CLI command's options name them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's import would cost a TAB more than this module is worth
if TYPE_CHECKING:
    from typing import Final

__all__ = ["ENV_API_KEY", "ENV_TENANT_ID", "ENV_URL"]

ENV_URL: Final = "DEPLOYPLANE_CONTROL_PLANE_URL"
ENV_API_KEY: Final = "DEPLOYPLANE_API_KEY"
ENV_TENANT_ID: Final = "DEPLOYPLANE_TENANT_ID"
