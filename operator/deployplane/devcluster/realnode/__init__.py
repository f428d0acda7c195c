"""A real node for the dev cluster: kubelet, containerd and kube-proxy in a sandbox.

Like kind's node container, without Docker: the node's daemons run in their own mount
and network namespaces (held by a `sleep` made with `unshare --net --mount`, entered
with `nsenter`), joined to the host by a veth pair on 198.18.0.0/30; pods live on
10.244.0.0/24 behind the bridge CNI plugin; an egress guard in the node's `mangle`
table refuses (and drops) anything sent elsewhere. The host's links, routes, iptables, sysctls
and mounts are left as they were (docs/devcluster.md, "A real node").

Modules: `layout` (names, addresses, paths), `configs` (pure: the daemons' config
files), `script` (pure: the namespace set-up and guard commands), `cgroups`, `sandbox`
(making and removing the namespaces), `ociarchive` (writing OCI image archives),
`forward` (the apiserver forwarder), `node` (starting and stopping the node).
"""
