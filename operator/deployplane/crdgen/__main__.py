"""`python -m deployplane.crdgen`: see `deployplane.crdgen.schema.main`."""

from __future__ import annotations

import sys

from deployplane.crdgen.schema import main

sys.exit(main())
