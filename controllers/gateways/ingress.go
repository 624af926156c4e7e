package gateways

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

type ingressKind struct{}

func (ingressKind) name() string             { return "Ingress" }
func (ingressKind) newObject() client.Object { return &networkingv1.Ingress{} }
func (ingressKind) finalizer() string        { return kfedv1alpha1.FinalizerIngress }

// serves reads rules[].host; an Ingress listens on 80, and on 443 when it
// has TLS.
func (ingressKind) serves(_ context.Context, _ client.Reader, obj client.Object) ([]string, []int32, error) {
	ing := obj.(*networkingv1.Ingress)
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	ports := []int32{80}
	if len(ing.Spec.TLS) > 0 {
		ports = append(ports, 443)
	}
	return hosts, ports, nil
}

func (ingressKind) backends(_ context.Context, _ client.Reader, obj client.Object) ([]string, error) {
	return ingressBackends(obj.(*networkingv1.Ingress)), nil
}

func (k ingressKind) sync(ctx context.Context, m registry.Member, obj client.Object, federation string) (memberCopy, error) {
	ing := obj.(*networkingv1.Ingress)
	if !m.Watches(&networkingv1.Ingress{}) {
		msg := fmt.Sprintf("kfed may not read Ingresses in cluster %s (its member RBAC predates them: apply deploy/member/rbac.yaml)", m.Name)
		return memberCopy{outcome: publish.WriteFailed, problem: msg}, errors.New(msg)
	}
	want := &networkingv1.Ingress{ObjectMeta: copyMeta(ing), Spec: *ing.Spec.DeepCopy()}
	copies.Mark(want, origin(ing), federation)
	var cur networkingv1.Ingress
	existing, err := getCopy(ctx, m, client.ObjectKeyFromObject(want), &cur)
	if err != nil {
		return memberCopy{outcome: publish.WriteFailed, problem: err.Error()}, err
	}
	if c, ok := conflict(m, existing, origin(ing), federation, k.name()); !ok {
		return c, nil
	}
	if _, err := copies.WriteCopy(ctx, m, existing, want); err != nil {
		return memberCopy{outcome: publish.WriteFailed, problem: err.Error()}, err
	}
	if existing == nil {
		return memberCopy{outcome: publish.Waiting}, nil
	}
	return ingressAddresses(cur.Status.LoadBalancer.Ingress), nil
}

// ingressAddresses reads an Ingress copy's addresses: its IPs, and the
// first hostname (a load balancer's name, resolved by observe).
func ingressAddresses(status []networkingv1.IngressLoadBalancerIngress) memberCopy {
	var mc memberCopy
	for _, in := range status {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			mc.addrs = append(mc.addrs, a.Unmap())
		} else if in.Hostname != "" && mc.hostname == "" {
			mc.hostname = in.Hostname
		}
	}
	if len(mc.addrs) == 0 && mc.hostname == "" {
		mc.outcome = publish.Waiting
	}
	return mc
}

func (k ingressKind) remove(ctx context.Context, m registry.Member, key types.NamespacedName, federation string) error {
	return removeCopy(ctx, m, key, &networkingv1.Ingress{}, federation, k.name())
}

func (ingressKind) setStatus(obj client.Object, addrs []netip.Addr, hostnames []string, conds []metav1.Condition) bool {
	ing := obj.(*networkingv1.Ingress)
	var lb []networkingv1.IngressLoadBalancerIngress
	for _, a := range addrs {
		lb = append(lb, networkingv1.IngressLoadBalancerIngress{IP: a.String()})
	}
	for _, h := range hostnames {
		lb = append(lb, networkingv1.IngressLoadBalancerIngress{Hostname: h})
	}
	ing.Status.LoadBalancer.Ingress = lb
	b, err := json.Marshal(conds)
	if err != nil {
		panic(fmt.Sprintf("encoding conditions cannot fail: %v", err))
	}
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	ing.Annotations[kfedv1alpha1.AnnotationConditions] = string(b)
	return true
}

func (ingressKind) conditions(obj client.Object) []metav1.Condition {
	var conds []metav1.Condition
	_ = json.Unmarshal([]byte(obj.GetAnnotations()[kfedv1alpha1.AnnotationConditions]), &conds) // a bad value reads as none
	return conds
}
