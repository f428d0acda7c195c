"""`deployplane export`: the command and its reads, GETs only (`command`), the custom
resources made of what was read, pure (`cr`), and their names, pure (`names`)."""

from deployplane.cli.commands.export.command import export_command

__all__ = ["export_command"]
