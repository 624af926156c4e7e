// Package kubetoken makes a client of a Kubernetes API read its bearer
// token from its file again the moment the API server refuses it, as
// client-go does for exec plugins but not for token files, which it
// rereads once a minute only. A member's agents read their control-plane
// token from a file the kubelet updates from a Secret (kfed join --renew
// writes it); with this, a revoked token costs one refused request, not a
// minute of them.
package kubetoken

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// Reread changes cfg, when it reads its bearer token from a file, to read
// the file again whenever a request is refused as unauthorized (401), as
// well as once a minute. A config without a token file is left as it is.
func Reread(cfg *rest.Config) {
	if cfg.BearerTokenFile == "" {
		return
	}
	ts := transport.NewCachedFileTokenSource(cfg.BearerTokenFile)
	cfg.BearerToken, cfg.BearerTokenFile = "", ""
	cfg.Wrap(transport.ResettableTokenSourceWrapTransport(ts))
}
