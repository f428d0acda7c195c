"""The emulator's own data plane: the built-in agent, the agents' reports."""
