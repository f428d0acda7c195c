"""Kubernetes access for every process of deployplane (the operator and the data-plane
agent): credentials (`credentials`), the retry policy of a request (`retry`), how long
the API has been failing (`health`), the client itself (`api.KubernetesApi`), and the
kinds' group, version, REST paths and shard label (`paths`, importing nothing: the
command line's declarations read it).

The ground floor: it imports no Kopf, no kind and nothing of the layers above, so the
agent loads it without the operator.
"""
