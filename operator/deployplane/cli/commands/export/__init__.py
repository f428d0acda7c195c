"""`deployplane export`: the command and its reads, GETs only (`command`), the custom
resources made of what was read, pure (`cr`), their names, pure (`names`), and which
deployments AgentDeployments already manage, pure (`managed`)."""
