package loopbackgw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// listener is what one port of a Gateway or Ingress serves: plain HTTP, or
// HTTPS with a certificate per hostname.
type listener struct {
	port int32
	tls  bool
	// certs are the certificates of the port's HTTPS listeners, each with
	// the listener's hostname ("" for a listener without one).
	certs []hostCert
}

type hostCert struct {
	host string
	cert *tls.Certificate
}

// pickCertificate chooses the certificate a handshake asking for server
// name sni gets, as a Gateway chooses a listener: the listener whose
// hostname is sni, then one whose wildcard hostname covers it, then a
// listener without a hostname (its certificate that names sni, else its
// first). A name no listener holds fails the handshake, as at a gateway
// that matches listeners by SNI: a client that sends none reaches only a
// listener without a hostname.
func pickCertificate(certs []hostCert, sni string) (*tls.Certificate, error) {
	sni = strings.ToLower(strings.TrimSuffix(sni, "."))
	if sni != "" {
		for _, c := range certs {
			if c.host == sni {
				return c.cert, nil
			}
		}
		for _, c := range certs {
			if suffix, ok := strings.CutPrefix(c.host, "*"); ok && strings.HasSuffix(sni, suffix) && !strings.Contains(strings.TrimSuffix(sni, suffix), ".") {
				return c.cert, nil
			}
		}
	}
	var open []*tls.Certificate
	for _, c := range certs {
		if c.host == "" {
			open = append(open, c.cert)
		}
	}
	for _, c := range open {
		if c.Leaf != nil && sni != "" && c.Leaf.VerifyHostname(sni) == nil {
			return c, nil
		}
	}
	if len(open) > 0 {
		return open[0], nil
	}
	return nil, fmt.Errorf("no HTTPS listener for server name %q", sni)
}

// loadCertificate reads the kubernetes.io/tls Secret namespace/name through c.
func loadCertificate(ctx context.Context, c client.Reader, namespace, name string) (*tls.Certificate, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	if s.Type != corev1.SecretTypeTLS {
		return nil, fmt.Errorf("Secret %s/%s is of type %q, not %s", namespace, name, s.Type, corev1.SecretTypeTLS)
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", namespace, name, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", namespace, name, err)
		}
	}
	return &cert, nil
}

// gatewayListeners are a Gateway's ports: HTTPS where a listener on the
// port is HTTPS (Gateway API lets no HTTP listener share its port), with
// the certificates its certificateRefs name (Secrets of its namespace; a
// reference elsewhere would need a ReferenceGrant, which this
// implementation does not read). The error says which references could
// not be used; the rest are served.
func gatewayListeners(ctx context.Context, c client.Reader, gw *gatewayv1.Gateway) ([]listener, error) {
	var out []listener
	var errs []error
	at := func(port int32) *listener {
		i := slices.IndexFunc(out, func(l listener) bool { return l.port == port })
		if i < 0 {
			out = append(out, listener{port: port})
			i = len(out) - 1
		}
		return &out[i]
	}
	for _, l := range gw.Spec.Listeners {
		pl := at(int32(l.Port))
		if l.Protocol != gatewayv1.HTTPSProtocolType {
			continue
		}
		pl.tls = true
		if l.TLS == nil || (l.TLS.Mode != nil && *l.TLS.Mode != gatewayv1.TLSModeTerminate) {
			errs = append(errs, fmt.Errorf("listener %s: only TLS termination is served", l.Name))
			continue
		}
		host := ""
		if l.Hostname != nil {
			host = strings.ToLower(string(*l.Hostname))
		}
		for _, ref := range l.TLS.CertificateRefs {
			if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") ||
				(ref.Namespace != nil && string(*ref.Namespace) != gw.Namespace) {
				errs = append(errs, fmt.Errorf("listener %s: only Secrets of the Gateway's namespace are served, not %s", l.Name, ref.Name))
				continue
			}
			cert, err := loadCertificate(ctx, c, gw.Namespace, string(ref.Name))
			if err != nil {
				errs = append(errs, fmt.Errorf("listener %s: %w", l.Name, err))
				continue
			}
			pl.certs = append(pl.certs, hostCert{host: host, cert: cert})
		}
	}
	return out, errors.Join(errs...)
}

// ingressListeners are an Ingress's ports: 80, and 443 with its spec.tls
// certificates when it has any (an entry without hosts serves any name).
func ingressListeners(ctx context.Context, c client.Reader, ing *networkingv1.Ingress) ([]listener, error) {
	out := []listener{{port: 80}}
	if len(ing.Spec.TLS) == 0 {
		return out, nil
	}
	secure := listener{port: 443, tls: true}
	var errs []error
	for _, t := range ing.Spec.TLS {
		cert, err := loadCertificate(ctx, c, ing.Namespace, t.SecretName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(t.Hosts) == 0 {
			secure.certs = append(secure.certs, hostCert{cert: cert})
		}
		for _, h := range t.Hosts {
			secure.certs = append(secure.certs, hostCert{host: strings.ToLower(h), cert: cert})
		}
	}
	return append(out, secure), errors.Join(errs...)
}

// secretUsers answers the Gateways and Ingresses of the Secret's namespace,
// whose certificates it may hold, listed through c.
func secretUsers(c client.Reader, kind string) func(context.Context, client.Object) []ctrl.Request {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var reqs []ctrl.Request
		switch kind {
		case "Gateway":
			var list gatewayv1.GatewayList
			if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
				return nil
			}
			for _, gw := range list.Items {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&gw)})
			}
		case "Ingress":
			var list networkingv1.IngressList
			if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
				return nil
			}
			for _, ing := range list.Items {
				if len(ing.Spec.TLS) > 0 {
					reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&ing)})
				}
			}
		}
		return reqs
	}
}
