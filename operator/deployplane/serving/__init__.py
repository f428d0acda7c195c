"""What the three programs (the operator, the listener agent, the emulator) share
to run as servers: probes and the settings read from the environment. Below all
three, so none of them imports another.
"""
