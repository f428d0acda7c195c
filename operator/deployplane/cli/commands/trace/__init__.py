"""`deployplane trace`: the command (`command`), which control plane a resource uses
(`controlplane`), the walk from a resource to what it leads to (`walk`), the reads, GETs
only (`readers`), and the tree with each line's verdict, pure (`tree`, `nodes`)."""

from deployplane.cli.commands.trace.command import parse_reference, trace

__all__ = ["parse_reference", "trace"]
