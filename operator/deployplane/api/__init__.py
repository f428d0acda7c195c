"""The control-plane API contract: models, errors and the typed client."""
