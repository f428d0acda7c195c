"""The custom resources: spec models, status shape, and the CRD schemas generated from them."""
