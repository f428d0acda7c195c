"""The command lines of the programs this package runs: the operator (`operator run`),
a listener's agent (`listener run`), the control-plane emulator (`controlplane
serve`), the local Kubernetes API (`dev cluster ...`) and the demo (`demo ...`).

Each module declares its commands (their options and help) and imports its program
when a command runs: the program is a function of those options, in its own package
(`deployplane.controller.run`, `deployplane.dataplane.runagent`, ...).
"""
