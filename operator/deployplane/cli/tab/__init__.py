"""TAB completion as kubectl and gh do it: the shell asks `deployplane` itself.

The scripts of `deployplane completion SHELL` (`scripts/`, cobra's, for bash, zsh, fish
and PowerShell) run `deployplane __complete WORDS... CURRENT` at each TAB, a hidden
command (`complete`) that answers from the command table, the commands' declarations:
what the words lead to (click's own resolution, leniently, as it parses), then what
that offers: its commands, its options, an option's choices, a resource's names from
the control plane (`names`), with a directive telling the shell whether file names may
be offered instead. A TAB imports click, the declarations the words go through and,
for names, the standard library's HTTP client: no typer, rich, pydantic, httpx,
Kubernetes client or YAML.
"""
