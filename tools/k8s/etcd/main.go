// etcd 3.6 (Debian ships 3.4, too old for a current kube-apiserver).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
