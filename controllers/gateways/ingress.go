package gateways

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
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

// origin is what a member copy of obj names as its origin.
func origin(obj client.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// copyMeta is the metadata of a member copy of obj: its name, labels, and
// annotations other than kfed's own.
func copyMeta(obj client.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), Labels: map[string]string{}, Annotations: map[string]string{}}
	maps.Copy(m.Labels, obj.GetLabels())
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, "kfed.io/") && k != corev1.LastAppliedConfigAnnotation {
			m.Annotations[k] = v
		}
	}
	return m
}

// getCopy reads the member object at key into into; it returns nil when
// there is none.
func getCopy(ctx context.Context, m registry.Member, key types.NamespacedName, into client.Object) (client.Object, error) {
	err := m.Client.Get(ctx, key, into)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s in %s: %w", key, m.Name, err)
	}
	return into, nil
}

// conflict applies the member-object rule: an object kfed did not make for
// this origin is a conflict, left alone (kfed adopts no Gateway or
// Ingress: its hostnames are the user's, and taking one over would publish
// them). ok is true when kfed may write the copy.
func conflict(m registry.Member, existing client.Object, origin, federation, kind string) (memberCopy, bool) {
	switch copies.Classify(existing, origin, federation) {
	case copies.Absent, copies.Ours:
		return memberCopy{}, true
	case copies.Conflict:
		return memberCopy{outcome: publish.LeftAlone, problem: fmt.Sprintf("cluster %s has a %s %s that another federation or object manages; left alone", m.Name, kind, origin)}, false
	default:
		return memberCopy{outcome: publish.LeftAlone, problem: fmt.Sprintf("cluster %s already has a %s %s that kfed did not create; left alone", m.Name, kind, origin)}, false
	}
}

// removeCopy deletes the member object at key if kfed made it for key.
func removeCopy(ctx context.Context, m registry.Member, key types.NamespacedName, obj client.Object, federation, kind string) error {
	if !m.Watches(obj) {
		return nil
	}
	if err := m.Client.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if copies.Classify(obj, key.String(), federation) != copies.Ours {
		return nil
	}
	uid := obj.GetUID()
	if err := m.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the %s %s in %s: %w", kind, key, m.Name, err)
	}
	return nil
}
