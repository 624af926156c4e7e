package loopbackgw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/test/tlstest"
)

// TestServesHTTPSBySNI: an HTTPS port presents the certificate of the
// listener whose hostname the client asks for (SNI), a wildcard listener's
// for a name under it, and refuses a name no listener holds; the request
// inside is routed by Host as over HTTP.
func TestServesHTTPSBySNI(t *testing.T) {
	g := &GW{
		opts: Options{Cluster: "cluster-1", Block: netip.MustParsePrefix("127.251.201.0/24")},
		objs: map[string]*frontend{}, inUse: map[netip.Addr]string{},
	}
	t.Cleanup(g.closeAll)
	roots := map[string]*x509.CertPool{} // by the certificate's first name
	cert := func(hosts ...string) *tls.Certificate {
		certPEM, keyPEM, pool := tlstest.Issue(t, hosts...)
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		roots[hosts[0]] = pool
		return &c
	}
	shop, api, wild := cert("shop.example.com"), cert("api.example.com"), cert("*.apps.example.com")
	port := int32(20000 + rand.IntN(20000))
	addr, err := g.ensure("Gateway shop/front", []listener{{port: port, tls: true, certs: []hostCert{
		{host: "shop.example.com", cert: shop}, {host: "api.example.com", cert: api}, {host: "*.apps.example.com", cert: wild},
	}}}, map[string]string{"shop.example.com": "HTTPRoute shop/shop", "api.example.com": "HTTPRoute shop/api", "x.apps.example.com": "HTTPRoute shop/apps"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := net.JoinHostPort(addr.String(), strconv.Itoa(int(port)))
	get := func(sni, host string) (*x509.Certificate, string, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: sni, InsecureSkipVerify: true}} //nolint:gosec // the certificate is checked below
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+at+"/", nil)
		if err != nil {
			return nil, "", err
		}
		req.Host = host
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.TLS.PeerCertificates[0], string(b), nil
	}
	for _, tc := range []struct {
		name, sni, host, cert, body string
	}{
		{"server name picks its listener's certificate", "shop.example.com", "shop.example.com", "shop.example.com", "HTTPRoute shop/shop in cluster cluster-1 answers shop.example.com"},
		{"another server name, another certificate", "api.example.com", "api.example.com", "api.example.com", "HTTPRoute shop/api"},
		{"a wildcard listener covers one label", "x.apps.example.com", "x.apps.example.com", "*.apps.example.com", "HTTPRoute shop/apps"},
		{"server names match without case", "SHOP.example.com", "shop.example.com", "shop.example.com", "HTTPRoute shop/shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, body, err := get(tc.sni, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject.CommonName != tc.cert {
				t.Errorf("certificate for %s, want %s", c.Subject.CommonName, tc.cert)
			}
			if _, err := c.Verify(x509.VerifyOptions{DNSName: strings.ToLower(tc.sni), Roots: roots[tc.cert]}); err != nil {
				t.Errorf("certificate does not verify for %s: %v", tc.sni, err)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body %q, want %q", body, tc.body)
			}
		})
	}
	for _, sni := range []string{"other.example.com", "a.b.apps.example.com", ""} {
		if _, _, err := get(sni, "shop.example.com"); err == nil {
			t.Errorf("a handshake for %q, which no listener holds, succeeded", sni)
		}
	}

	// A listener without a hostname takes any name, and no name.
	open := int32(20000 + rand.IntN(20000))
	if _, err := g.ensure("Gateway shop/front", []listener{{port: open, tls: true, certs: []hostCert{{cert: shop}}}},
		map[string]string{"shop.example.com": "HTTPRoute shop/shop"}, nil); err != nil {
		t.Fatal(err)
	}
	at = net.JoinHostPort(addr.String(), strconv.Itoa(int(open)))
	for _, sni := range []string{"", "shop.example.com", "other.example.com"} {
		if c, _, err := get(sni, "shop.example.com"); err != nil || c.Subject.CommonName != "shop.example.com" {
			t.Errorf("server name %q at a listener without hostname: %v, %v", sni, c, err)
		}
	}

	// The same port served as HTTP once the listener is HTTP.
	if _, err := g.ensure("Gateway shop/front", []listener{{port: open}}, map[string]string{"shop.example.com": "HTTPRoute shop/shop"}, nil); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+at+"/", nil)
	req.Host = "shop.example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the port turned HTTP does not answer HTTP: %v", err)
	}
	resp.Body.Close()
}
