// coredns: cluster DNS for the dev cluster's real node, with only the plugins its
// Corefile uses (operator/deployplane/devcluster/realnode/dns.py), so the cloud DNS
// providers of the stock build are not compiled. Same pattern as CoreDNS's own
// "external plugins" build: set the directives, then run coremain.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// In the order of CoreDNS's plugin.cfg (the order a query passes them).
var directives = []string{"bind", "ready", "health", "errors", "cache", "template", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
