// Package scheme is the runtime scheme of every kind kfed reads or writes:
// Kubernetes' own, kfed's, ExternalDNS's DNSEndpoint, the Gateway API, the
// Cluster Inventory API, the Multi-Cluster Services and About APIs. The
// controllers, the CLI and the test bed build their clients with it.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// New returns a scheme of every kind kfed reads or writes.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, kfedv1alpha1.AddToScheme, extdnsv1alpha1.AddToScheme, gatewayv1.Install,
		inventoryv1alpha1.AddToScheme, mcsv1beta1.Install, aboutv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
