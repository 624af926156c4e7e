package fedtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/framework"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// StartGatewayFederation starts three members with the Gateway API and the
// loopback implementation, joined, and kfed's controller with o.
func StartGatewayFederation(t *testing.T, o manager.Options, opts ...framework.Option) *framework.Federation {
	f := framework.Start(t, opts...)
	if err := gatewayv1.Install(f.Scheme); err != nil {
		t.Fatal(err)
	}
	f.InstallGatewayAPI("federation", "cluster-1", "cluster-2", "cluster-3")
	f.StartLoopbackGateways()
	f.JoinAll()
	f.StartController(o)
	return f
}

// FederatedGateway is a federated Gateway of the loopback class with one
// HTTP listener for listenerHost.
func FederatedGateway(namespace, name, listenerHost string) *gatewayv1.Gateway {
	l := gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}
	if listenerHost != "" {
		h := gatewayv1.Hostname(listenerHost)
		l.Hostname = &h
	}
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: loopbackgw.ClassName, Listeners: []gatewayv1.Listener{l}},
	}
}

// PublishedAddresses waits until the DNSEndpoint kfed-system/name publishes
// host as an A record with n addresses, one per cluster of its table, and
// returns them.
func PublishedAddresses(t *testing.T, f *framework.Federation, name, host string, n int) []string {
	t.Helper()
	var addrs []string
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := f.Client("federation").Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: name}, &ep); err != nil {
			return err
		}
		table, err := dnsendpoint.ReadClusters(&ep)
		if err != nil {
			return err
		}
		for _, e := range ep.Spec.Endpoints {
			if e.DNSName == host && e.RecordType == "A" && len(e.Targets) == n && len(table) == n {
				addrs = slices.Clone(e.Targets)
				return nil
			}
		}
		return fmt.Errorf("DNSEndpoint %s: %v, %d clusters", name, ep.Spec.Endpoints, len(table))
	})
	if !maps.Equal(dnsendpoint.Selector("fed"), SelectorOf(f, name)) {
		t.Errorf("DNSEndpoint %s is not labelled for the readers", name)
	}
	return addrs
}

// SelectorOf is the labels of the DNSEndpoint kfed-system/name, the
// selector its readers list it by.
func SelectorOf(f *framework.Federation, name string) map[string]string {
	var ep extdnsv1alpha1.DNSEndpoint
	_ = f.Client("federation").Get(context.Background(), client.ObjectKey{Namespace: "kfed-system", Name: name}, &ep)
	return ep.Labels
}

// OKBody sends req with hc and returns the body of its 200 response.
func OKBody(hc *http.Client, req *http.Request) (string, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}
