// Command etcd is etcd's own server main, built here so that the test bed's etcd
// comes from the module proxy at the version kube-apiserver was tested with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
