package v1alpha1

import "testing"

func TestEndpointKeyReadsBack(t *testing.T) {
	tests := []struct {
		key                         string
		namespace, service, cluster string
		ok                          bool
	}{
		{EndpointKey("shop", "web", "cluster-1"), "shop", "web", "cluster-1", true},
		{"shop/web", "", "", "", false},
		{"shop//cluster-1", "", "", "", false},
		{"/web/cluster-1", "", "", "", false},
		{"shop/web/", "", "", "", false},
		{"", "", "", "", false},
	}
	for _, tt := range tests {
		ns, svc, cl, ok := ParseEndpointKey(tt.key)
		if ns != tt.namespace || svc != tt.service || cl != tt.cluster || ok != tt.ok {
			t.Errorf("ParseEndpointKey(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.key, ns, svc, cl, ok, tt.namespace, tt.service, tt.cluster, tt.ok)
		}
	}
}
