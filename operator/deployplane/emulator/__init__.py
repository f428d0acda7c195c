"""The control-plane emulator: a faithful, persistent implementation of the deployment
control plane's published API, with extensions strict mode turns off (docs/emulator.md).
`deployplane controlplane serve` runs it (`serve.py`)."""
