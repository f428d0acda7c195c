"""HTTP routes, one module per resource; thin: parse, call the store, answer."""
