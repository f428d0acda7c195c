"""The schema machinery the kinds are built with: a model's OpenAPI schema (`openapi.py`),
CEL validation rules (`cel.py`) and printer columns (`columns.py`). The kinds themselves
are in `deployplane.kinds`, each in its folder."""
