"""`python -m deployplane.cli`: the same as the `deployplane` command."""

from deployplane.cli import main

main()
