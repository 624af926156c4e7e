package main

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// statusListsGatewaysAndIngresses (TestStatusListsGatewaysAndIngresses):
// kfed status lists federated Gateways and Ingresses beside Services, with
// their members' addresses and kfed's conditions. It installs the Gateway
// API in the control plane.
func statusListsGatewaysAndIngresses(t *testing.T, f *framework.Federation) {
	f.InstallGatewayAPI("federation")
	ctx := context.Background()
	scheme, err := kfedscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	fed, err := client.New(f.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := fed.Create(ctx, framework.Namespace("shop")); err != nil {
		t.Fatal(err)
	}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: loopbackgw.ClassName,
			Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}},
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			kfedv1alpha1.AnnotationFederated:  "true",
			kfedv1alpha1.AnnotationConditions: `[{"type":"kfed.io/HostnamesPublished","status":"False","reason":"HostnameRefused","message":"x","lastTransitionTime":"2026-11-25T12:00:00Z"}]`,
		}},
		Spec: networkingv1.IngressSpec{IngressClassName: new(loopbackgw.IngressClassName), Rules: []networkingv1.IngressRule{{Host: "web.example.com"}}},
	}
	fedtest.DeleteAtEnd(t, fed, gw.DeepCopy(), ing.DeepCopy())
	if err := fed.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if err := fed.Create(ctx, ing); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "status", "--kubeconfig", f.Kubeconfig, "--color", "never")
	if err != nil {
		t.Fatalf("kfed status: %v\n%s", err, out)
	}
	for _, want := range []string{"GATEWAY OR INGRESS", "Gateway shop/front", "Ingress shop/web", "HostnamesPublished=False (HostnameRefused"} {
		if !strings.Contains(out, want) {
			t.Errorf("kfed status lacks %q:\n%s", want, out)
		}
	}
}
