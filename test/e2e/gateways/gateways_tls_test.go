package gateways

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/tlstest"
)

// federatedGatewayServesHTTPS (TestFederatedGatewayServesHTTPS): a federated
// Gateway with an HTTPS listener for shop.example.com, whose certificate each
// member holds in a kubernetes.io/tls Secret (as cert-manager would put it
// there), is served over TLS by every member's loopback implementation. The
// health checkers, told to check https, probe each cluster with the hostname as
// TLS server name and Host header and find every one up — the implementation
// refuses a handshake for a name no listener holds, and answers 404 to a host
// no route holds, so a probe lacking either would fail. A client that connects
// to each published address asking for shop.example.com (curl --resolve)
// verifies the certificate and reaches the route in that cluster; so does one
// through a federated Ingress's spec.tls.
func federatedGatewayServesHTTPS(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{HealthFreshness: fedtest.HCFreshness})
	fed := f.Client("federation")
	const ns = "tls"
	fedtest.Create(t, fed, framework.Namespace(ns))
	certPEM, keyPEM, roots := tlstest.Issue(t, "shop.example.com", "www.example.com")
	for _, m := range f.Members {
		c := f.Client(m.Name)
		fedtest.Create(t, c, framework.Namespace(ns), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-tls"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		})
	}
	host := gatewayv1.Hostname("shop.example.com")
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front", Annotations: map[string]string{
			kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationHealthCheck: "https",
		}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: loopbackgw.ClassName, Listeners: []gatewayv1.Listener{{
			Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: &host,
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "shop-tls"}}},
		}}},
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
		},
	}
	class := loopbackgw.IngressClassName
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "www", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"www.example.com"}, SecretName: "shop-tls"}},
			Rules:            []networkingv1.IngressRule{{Host: "www.example.com"}},
		},
	}
	deleteAtEnd(t, f, gw, route, ing)
	fedtest.Create(t, fed, gw, route, ing)

	startCheckers(t, f)

	addrs := fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop.example.com", 3)
	reached := map[string]bool{}
	for _, a := range addrs {
		body := tlsGet(t, roots, a, "shop.example.com")
		if !strings.Contains(body, "HTTPRoute "+ns+"/shop in cluster cluster-") {
			t.Errorf("GET https://shop.example.com/ at %s: %q", a, body)
		}
		reached[strings.Fields(body)[4]] = true
	}
	if len(reached) != 3 {
		t.Errorf("the addresses reach clusters %v over TLS, want three", reached)
	}
	for _, a := range fedtest.PublishedAddresses(t, f, "ingress."+ns+".www", "www.example.com", 3) {
		if body := tlsGet(t, roots, a, "www.example.com"); !strings.Contains(body, "Ingress "+ns+"/www in cluster cluster-") {
			t.Errorf("GET https://www.example.com/ at %s: %q", a, body)
		}
	}

	// The Gateway's three clusters and the Ingress's three, up for several
	// probe rounds: every https probe sent the server name and the Host
	// (see below).
	wantCheckersFindAllUp(t, fed, 6)
	// A handshake without the server name fails: the probes' success above
	// is the server name's doing.
	conn, err := tls.Dial("tcp", net.JoinHostPort(addrs[0], "443"), &tls.Config{RootCAs: roots, InsecureSkipVerify: true}) //nolint:gosec // only the handshake matters
	if err == nil {
		conn.Close()
		t.Errorf("a handshake with %s without server name succeeded", addrs[0])
	}
}

// tlsGet asks addr, port 443, for https://host/ as curl --resolve
// host:443:addr does: the server name and Host are host, and the
// certificate must verify for host against roots.
func tlsGet(t *testing.T, roots *x509.CertPool, addr, host string) string {
	t.Helper()
	if ip := net.ParseIP(addr); ip == nil || !ip.IsLoopback() {
		t.Fatalf("%s is not a loopback address", addr)
	}
	dialer := &net.Dialer{Timeout: 2 * time.Second}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, net.JoinHostPort(addr, "443"))
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	var body string
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/", nil)
		if err != nil {
			return err
		}
		body, err = fedtest.OKBody(hc, req)
		return err
	})
	return body
}
