// Package identity owns each member's identities in the federation control
// plane (ADR 0013): the member namespace its agents write in, a
// ServiceAccount there for each agent (the health checker, kfed's
// CoreDNS), what each may do (deploy/identities/roles.yaml), and their
// tokens. A token is bound to a Secret of the member namespace, so that
// deleting the Secret revokes it at once; deleting the ServiceAccount
// revokes every token it has.
//
// Its callers hold the control plane's administrator credentials: kfed
// join, kfed join --renew, kfed unjoin, kfed agent-kubeconfig and kfed dev
// up. kfed-controller never creates an identity.
package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/deploy/identities"
)

// Component is one of a member's agents that reaches the control plane.
type Component string

const (
	// HealthCheck is kfed-healthcheck: it writes its own HealthReport and
	// heartbeat Lease.
	HealthCheck Component = "healthcheck"
	// CoreDNS is CoreDNS with the kfed plugin: it only reads.
	CoreDNS Component = "coredns"
)

// Components are every agent a member has, in a fixed order.
func Components() []Component { return []Component{HealthCheck, CoreDNS} }

// ParseComponent reads a component's name, as --component takes it.
func ParseComponent(s string) (Component, error) {
	c := Component(s)
	if !slices.Contains(Components(), c) {
		return "", fmt.Errorf("component %q: want healthcheck or coredns", s)
	}
	return c, nil
}

// ServiceAccount is the name of c's ServiceAccount in a member namespace.
func (c Component) ServiceAccount() string { return "kfed-" + string(c) }

// roles are the ClusterRoles of deploy/identities/roles.yaml.
func roles() ([]rbacv1.ClusterRole, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(identities.Roles), 4096)
	var out []rbacv1.ClusterRole
	for {
		var r rbacv1.ClusterRole
		if err := d.Decode(&r); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading the member roles: %w", err)
		}
		if r.Name != "" {
			out = append(out, r)
		}
	}
}

// readerRole and ownRole name c's ClusterRoles: one bound everywhere, one in
// the member namespace alone.
func (c Component) readerRole() string { return "kfed-member-" + string(c) + "-reader" }
func (c Component) ownRole() string    { return "kfed-member-" + string(c) + "-own" }

// clusterRoleBinding names the binding of cluster's c to c's reader role.
func clusterRoleBinding(cluster string, c Component) string {
	return "kfed-member-" + cluster + "-" + string(c)
}

func labels(cluster string) map[string]string {
	return map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelCluster: cluster}
}

// Ensure creates cluster's identities, or brings them in line with this
// version of kfed: the roles, the member namespace, a ServiceAccount per
// component and their bindings. It issues no token.
func Ensure(ctx context.Context, c client.Client, cluster string) error {
	rs, err := roles()
	if err != nil {
		return err
	}
	for i := range rs {
		want := rs[i]
		r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		if err := upsert(ctx, c, r, func() { r.Labels, r.Rules = merge(r.Labels, want.Labels), want.Rules }); err != nil {
			return err
		}
	}
	ns := kfedv1alpha1.MemberNamespace(cluster)
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := upsert(ctx, c, n, func() { n.Labels = merge(n.Labels, labels(cluster)) }); err != nil {
		return err
	}
	if n.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is being deleted: wait until it is gone (the control plane's namespace controller removes it), then join again", ns)
	}
	for _, comp := range Components() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: comp.ServiceAccount(), Namespace: ns}}
		if err := upsert(ctx, c, sa, func() {
			sa.Labels = merge(sa.Labels, labels(cluster))
			sa.AutomountServiceAccountToken = new(false) // it acts in members, never in a pod here
		}); err != nil {
			return err
		}
		subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: comp.ServiceAccount()}}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleBinding(cluster, comp)}}
		if err := upsert(ctx, c, crb, func() {
			crb.Labels, crb.Subjects = merge(crb.Labels, labels(cluster)), subjects
			crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: comp.readerRole()}
		}); err != nil {
			return err
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: comp.ServiceAccount(), Namespace: ns}}
		if err := upsert(ctx, c, rb, func() {
			rb.Labels, rb.Subjects = merge(rb.Labels, labels(cluster)), subjects
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: comp.ownRole()}
		}); err != nil {
			return err
		}
	}
	return nil
}

// upsert creates obj or updates it with mutate; a role binding whose
// roleRef changed, which the API server refuses to update, is replaced.
func upsert(ctx context.Context, c client.Client, obj client.Object, mutate func()) error {
	_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error { mutate(); return nil })
	if apierrors.IsInvalid(err) && isBinding(obj) {
		if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing %T %s: %w", obj, obj.GetName(), err)
		}
		obj.SetResourceVersion("")
		_, err = controllerutil.CreateOrUpdate(ctx, c, obj, func() error { mutate(); return nil })
	}
	if err != nil {
		return fmt.Errorf("writing %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

func isBinding(obj client.Object) bool {
	switch obj.(type) {
	case *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
		return true
	}
	return false
}

func merge(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// Token is a credential of one member identity.
type Token struct {
	// Value is the bearer token.
	Value string
	// Expires is when the API server stops accepting it.
	Expires time.Time
	// Secret names the Secret of the member namespace it is bound to:
	// deleting it revokes the token.
	Secret string
}

// Issue returns a new token of cluster's identity c, valid for d (the API
// server may shorten it), bound to a new Secret of the member namespace.
// Ensure must have run.
func Issue(ctx context.Context, cl client.Client, cluster string, c Component, d time.Duration) (Token, error) {
	ns := kfedv1alpha1.MemberNamespace(cluster)
	bound := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: c.ServiceAccount() + "-token-", Namespace: ns,
			Labels: merge(labels(cluster), map[string]string{kfedv1alpha1.LabelTokenFor: string(c)})},
		// It holds nothing: it exists so that deleting it revokes the token.
		Type: corev1.SecretTypeOpaque,
	}
	if err := cl.Create(ctx, bound); err != nil {
		return Token{}, fmt.Errorf("creating the Secret a token of %s/%s is bound to: %w", ns, c.ServiceAccount(), err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: c.ServiceAccount(), Namespace: ns}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: new(int64(d.Seconds())),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: bound.Name, UID: bound.UID},
	}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		_ = cl.Delete(context.WithoutCancel(ctx), bound)
		return Token{}, fmt.Errorf("a token of %s/%s: %w", ns, c.ServiceAccount(), err)
	}
	return Token{Value: tr.Status.Token, Expires: tr.Status.ExpirationTimestamp.Time, Secret: bound.Name}, nil
}

// RevokeOthers revokes every token of cluster's identity c but the one
// bound to keep ("" revokes them all): their Secrets are deleted, and the
// API server refuses them from then on.
func RevokeOthers(ctx context.Context, cl client.Client, cluster string, c Component, keep string) error {
	var list corev1.SecretList
	if err := cl.List(ctx, &list, client.InNamespace(kfedv1alpha1.MemberNamespace(cluster)),
		client.MatchingLabels{kfedv1alpha1.LabelTokenFor: string(c)}); err != nil {
		return fmt.Errorf("listing the tokens of %s's %s: %w", cluster, c, err)
	}
	var errs []error
	for i := range list.Items {
		if s := &list.Items[i]; s.Name != keep {
			if err := cl.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("revoking token %s/%s: %w", s.Namespace, s.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Remove deletes cluster's identities and what its agents wrote: every
// token is refused from the first deletion on (the ServiceAccounts go
// first), then the bindings, reports and heartbeats. The empty member
// namespace stays, so that joining the cluster again never waits for a
// namespace controller the control plane may not run.
func Remove(ctx context.Context, cl client.Client, cluster string) error {
	ns := kfedv1alpha1.MemberNamespace(cluster)
	mine := client.MatchingLabels(labels(cluster))
	var errs []error
	for _, c := range Components() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: c.ServiceAccount(), Namespace: ns}}
		if err := cl.Delete(ctx, sa); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting ServiceAccount %s/%s: %w", ns, sa.Name, err))
		}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRoleBinding(cluster, c)}}
		if err := cl.Delete(ctx, crb); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting ClusterRoleBinding %s: %w", crb.Name, err))
		}
	}
	for _, obj := range []client.Object{&corev1.Secret{}, &rbacv1.RoleBinding{}} {
		if err := cl.DeleteAllOf(ctx, obj, client.InNamespace(ns), mine); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %T in %s: %w", obj, ns, err))
		}
	}
	// What the agents wrote carries their labels, not kfed join's.
	for _, obj := range []client.Object{&kfedv1alpha1.HealthReport{}, &coordinationv1.Lease{}} {
		if err := cl.DeleteAllOf(ctx, obj, client.InNamespace(ns)); client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("deleting %T in %s: %w", obj, ns, err))
		}
	}
	return errors.Join(errs...)
}

// Kubeconfig is a kubeconfig for cluster's identity c with token, reaching
// the control plane as server describes it. With tokenFile set the token
// is read from that file (and read again when it changes) instead of held.
func Kubeconfig(server *clientcmdapi.Cluster, cluster string, c Component, token, tokenFile string) *clientcmdapi.Config {
	user := kfedv1alpha1.MemberNamespace(cluster) + "/" + c.ServiceAccount()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["federation"] = server.DeepCopy()
	auth := &clientcmdapi.AuthInfo{Token: token}
	if tokenFile != "" {
		auth = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["federation"] = &clientcmdapi.Context{Cluster: "federation", AuthInfo: user}
	cfg.CurrentContext = "federation"
	return cfg
}
