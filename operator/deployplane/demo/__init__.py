"""`deployplane demo up|down|status`: the whole system on one machine."""
