"""What a release's listener agent renders for one deployment, printed as JSON: run as a
script with that release's `operator/` first on PYTHONPATH, so that its own render code
answers (`python renderdump.py < inputs.json`).

The upgrade test (tests/e2e/test_realnode_upgrade.py) runs it once with the previous
release's code and once with this checkout's, on the same inputs read from the control
plane and the cluster, to learn whether the release changed the render and which objects
it changed. It reads on stdin {"deployment", "revision", "listener", "work"} as the
control plane answers them (the work: the data-plane extension's answer, with the image
and the secret values), "database_password" and "env" (the DEPLOYPLANE_* variables of
the agent's container: its render settings). It prints the rendered objects without the
Secrets (secret values never leave the process) and the owner's render digest.

It imports nothing but the standard library and `deployplane`, whichever is on the path.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    from deployplane.api.dataplane import RevisionWork
    from deployplane.api.models import Deployment, Listener, Revision
    from deployplane.dataplane.render import OWNER_DIGEST, render
    from deployplane.dataplane.render.settings import from_env

    inputs: dict[str, Any] = json.load(sys.stdin)
    work = RevisionWork.model_validate(inputs["work"])
    rendered = render(
        Deployment.model_validate(inputs["deployment"]),
        Revision.model_validate(inputs["revision"]),
        Listener.model_validate(inputs["listener"]),
        work.image_uri or "",
        secret_values=work.secret_values,
        database_password=inputs["database_password"],
        settings=from_env(inputs["env"]),
        runtime=work.runtime,
    )
    json.dump(
        {
            "objects": [o for o in rendered.objects if o["kind"] != "Secret"],
            "digest": rendered.owner["data"][OWNER_DIGEST],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
