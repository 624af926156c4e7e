package devenv

import (
	"context"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// httpClient returns a client for probing: the admin TLS config when cfg is
// set, plain HTTP otherwise, with keep-alives off so polls leave no idle
// connections behind.
func httpClient(cfg *rest.Config) (*http.Client, error) {
	if cfg == nil {
		return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, nil
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}}, nil
}

func newGet(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}
