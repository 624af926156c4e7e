// Package clusters owns member cluster registration: joining and unjoining a
// cluster (a kubeconfig Secret plus a Cluster object in the control plane),
// a member's client config from its Secret or its ClusterProfile, and the
// Cluster controller that probes each member and sets its Ready and Offline
// conditions. The members' clients and caches are package registry's; the
// copies kfed writes in them, package copies'. Open is the opening every
// federated-object controller's reconcile shares.
package clusters

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/internal/geo"
)

// JoinOptions describe a cluster to register.
type JoinOptions struct {
	// Name of the Cluster object; it appears in DNS targets' provenance.
	Name string
	// Region and Zones place the cluster. Either may be left empty: kfed then
	// reads it from the member's nodes' topology.kubernetes.io labels, now
	// and as the nodes change, and Join fails if no node carries them.
	Region string
	Zones  []string
	// Location is where the cluster is, for ordering clusters by distance;
	// nil leaves it to the region's place in kfed's table of cloud regions.
	Location *geo.Point
	// Kubeconfig holds a context reaching the member.
	Kubeconfig *clientcmdapi.Config
	// Context names that context; Name when empty.
	Context string
	// Namespace for the kubeconfig Secret; kfed-system when empty.
	Namespace string
	// ProbeTimeout bounds the reachability check; 10 s when zero.
	ProbeTimeout time.Duration
	// ClusterSet, if set, is written as the member's ClusterProperty
	// clusterset.k8s.io when it has none: the federation's name.
	ClusterSet string
	// MaxCheckers is how many of the member's checkers count in a quorum
	// (spec.healthCheck.maxCheckers); 0 leaves the default, one.
	MaxCheckers int32
}

// SecretName is the name of the Secret holding the kubeconfig of cluster name.
func SecretName(name string) string { return "kfed-cluster-" + name }

// Join checks the member is reachable and the name free, then creates the
// kubeconfig Secret and the Cluster. On any error it leaves the control plane
// as it was.
func Join(ctx context.Context, fed client.Client, o JoinOptions) (*kfedv1alpha1.Cluster, error) {
	if err := validateJoin(&o); err != nil {
		return nil, err
	}
	member, err := MemberKubeconfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	cfg, err := RESTConfig(member)
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", o.Context, err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.ProbeTimeout)
	defer cancel()
	if _, err := Probe(pctx, cfg); err != nil {
		return nil, fmt.Errorf("cluster %q (context %q, server %s) is unreachable: %w", o.Name, o.Context, cfg.Host, err)
	}

	var found kfedv1alpha1.ClusterStatus
	if o.Region == "" || len(o.Zones) == 0 {
		if found, err = locate(ctx, cfg, o); err != nil {
			return nil, err
		}
	}

	var existing kfedv1alpha1.Cluster
	switch err := fed.Get(ctx, client.ObjectKey{Name: o.Name}, &existing); {
	case err == nil:
		return nil, fmt.Errorf("a cluster named %q is already joined (region %s): to replace its credentials, keeping its shards and records, add --renew; "+
			"to join another cluster, pick another name", o.Name, existing.Spec.Region)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("looking up cluster %q: %w", o.Name, err)
	}
	if err := writeClusterID(ctx, cfg, o); err != nil {
		return nil, err
	}
	data, err := clientcmd.Write(*member)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	if err := ensureNamespace(ctx, fed, o.Namespace); err != nil {
		return nil, err
	}
	secret := kubeconfigSecret(o, data)
	if err := fed.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("secret %s/%s already exists and no cluster %q uses it; delete it or pick another name", o.Namespace, secret.Name, o.Name)
		}
		return nil, fmt.Errorf("creating kubeconfig secret: %w", err)
	}
	cluster := &kfedv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: kfedv1alpha1.ClusterSpec{
			Region: o.Region,
			Zones:  o.Zones,
			KubeconfigSecretRef: kfedv1alpha1.SecretKeyRef{
				Namespace: o.Namespace, Name: secret.Name, Key: kfedv1alpha1.DefaultKubeconfigKey,
			},
		},
	}
	if o.Location != nil {
		cluster.Spec.Location = kfedv1alpha1.NewGeoLocation(*o.Location)
	}
	if o.MaxCheckers > 0 {
		cluster.Spec.HealthCheck.MaxCheckers = &o.MaxCheckers
	}
	if err := fed.Create(ctx, cluster); err != nil {
		// Leave nothing behind: the Secret is useless without its Cluster.
		if derr := fed.Delete(context.WithoutCancel(ctx), secret); derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("removing secret %s/%s again: %w", o.Namespace, secret.Name, derr))
		}
		return nil, fmt.Errorf("creating cluster %q: %w", o.Name, err)
	}
	// The member's agents' identities (ADR 0013): kfed join issues their
	// tokens.
	if err := identity.Ensure(ctx, fed, o.Name); err != nil {
		undo := context.WithoutCancel(ctx)
		return nil, errors.Join(fmt.Errorf("cluster %q: creating its agents' identities: %w", o.Name, err),
			identity.Remove(undo, fed, o.Name), client.IgnoreNotFound(fed.Delete(undo, cluster)), client.IgnoreNotFound(fed.Delete(undo, secret)))
	}
	// What the nodes say, for the caller to show; the Cluster controller
	// writes it to the status.
	cluster.Status.Region, cluster.Status.Zones = found.Region, found.Zones
	if p, ok, _ := cluster.Coordinates(); ok {
		cluster.Status.Location = kfedv1alpha1.NewGeoLocation(p)
	}
	return cluster, nil
}

// writeClusterID gives the member its KEP-2149 identity where it has none:
// ClusterProperty cluster.clusterset.k8s.io with the cluster's name, and
// clusterset.k8s.io with o.ClusterSet. A property the member holds already
// is kept, as another MCS implementation may have set it: its cluster ID
// then names the cluster in the Multi-Cluster Services API (mcs.ClusterID)
// even where it differs from the Cluster's name. A member without the
// ClusterProperty CRD, or whose credentials may not read it, is joined as
// before.
func writeClusterID(ctx context.Context, cfg *rest.Config, o JoinOptions) error {
	c, err := client.New(cfg, client.Options{Scheme: aboutScheme()})
	if err != nil {
		return fmt.Errorf("cluster %q: %w", o.Name, err)
	}
	props := []struct{ name, value string }{{aboutv1alpha1.ClusterIDProperty, o.Name}, {aboutv1alpha1.ClusterSetProperty, o.ClusterSet}}
	for _, p := range props {
		if p.value == "" {
			continue
		}
		var have aboutv1alpha1.ClusterProperty
		switch err := c.Get(ctx, client.ObjectKey{Name: p.name}, &have); {
		case meta.IsNoMatchError(err):
			return nil // no ClusterProperty CRD in the member
		case apierrors.IsForbidden(err):
			// Credentials that predate the MCS API (an older member
			// RBAC): the member joins as before, named by its Cluster.
			return nil
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("cluster %q: reading ClusterProperty %s: %w", o.Name, p.name, err)
		}
		cp := &aboutv1alpha1.ClusterProperty{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}},
			Spec:       aboutv1alpha1.ClusterPropertySpec{Value: p.value},
		}
		if err := c.Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster %q: writing ClusterProperty %s: %w", o.Name, p.name, err)
		}
	}
	return nil
}

func aboutScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = aboutv1alpha1.AddToScheme(s) // registers two types: cannot fail
	return s
}

// kubeconfigSecret is the Secret that holds the member's kubeconfig, data.
func kubeconfigSecret(o JoinOptions, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: SecretName(o.Name), Namespace: o.Namespace,
			Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelCluster: o.Name},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{kfedv1alpha1.DefaultKubeconfigKey: data},
	}
}

// locate reads the region and zones o leaves empty from the member's nodes.
func locate(ctx context.Context, cfg *rest.Config, o JoinOptions) (kfedv1alpha1.ClusterStatus, error) {
	lctx, cancel := context.WithTimeout(ctx, o.ProbeTimeout)
	defer cancel()
	region, zones, err := NodeTopology(lctx, cfg)
	if err != nil {
		return kfedv1alpha1.ClusterStatus{}, fmt.Errorf("cluster %q: no --region or --zone given, and its nodes could not be read: %w", o.Name, err)
	}
	var errs []error
	if o.Region == "" && region == "" {
		errs = append(errs, fmt.Errorf("no --region given and no node of cluster %q has the label %s", o.Name, corev1.LabelTopologyRegion))
	}
	if len(o.Zones) == 0 && len(zones) == 0 {
		errs = append(errs, fmt.Errorf("no --zone given and no node of cluster %q has the label %s", o.Name, corev1.LabelTopologyZone))
	}
	if err := errors.Join(errs...); err != nil {
		return kfedv1alpha1.ClusterStatus{}, err
	}
	var st kfedv1alpha1.ClusterStatus
	if o.Region == "" {
		st.Region = region
	}
	if len(o.Zones) == 0 {
		st.Zones = zones
	}
	return st, nil
}

func validateJoin(o *JoinOptions) error {
	var errs []error
	for _, msg := range validation.IsDNS1123Label(o.Name) {
		errs = append(errs, fmt.Errorf("cluster name %q: %s", o.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(o.Region) {
		if o.Region != "" {
			errs = append(errs, fmt.Errorf("region %q: %s", o.Region, msg))
		}
	}
	for _, z := range o.Zones {
		for _, msg := range validation.IsDNS1123Label(z) {
			errs = append(errs, fmt.Errorf("zone %q: %s", z, msg))
		}
	}
	if o.Location != nil {
		if err := o.Location.Check(); err != nil {
			errs = append(errs, fmt.Errorf("location: %w", err))
		}
	}
	if o.Kubeconfig == nil {
		errs = append(errs, errors.New("no kubeconfig"))
	}
	if o.MaxCheckers < 0 {
		errs = append(errs, fmt.Errorf("max checkers %d: want 1 or more", o.MaxCheckers))
	}
	if o.Context == "" {
		o.Context = o.Name
	}
	if o.Namespace == "" {
		o.Namespace = kfedv1alpha1.DefaultNamespace
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = 10 * time.Second
	}
	return errors.Join(errs...)
}

// MemberKubeconfig cuts the context ctxName out of cfg into a self-contained
// kubeconfig (certificates inlined) whose current context is that one.
func MemberKubeconfig(cfg *clientcmdapi.Config, ctxName string) (*clientcmdapi.Config, error) {
	if _, ok := cfg.Contexts[ctxName]; !ok {
		var names []string
		for n := range cfg.Contexts {
			names = append(names, n)
		}
		return nil, fmt.Errorf("context %q is not in the kubeconfig (it has %v)", ctxName, names)
	}
	out := cfg.DeepCopy()
	out.CurrentContext = ctxName
	if err := clientcmdapi.MinifyConfig(out); err != nil {
		return nil, fmt.Errorf("context %q: %w", ctxName, err)
	}
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return nil, fmt.Errorf("inlining the files context %q refers to: %w", ctxName, err)
	}
	return out, nil
}

// RESTConfig is the client config of cfg's current context.
func RESTConfig(cfg *clientcmdapi.Config) (*rest.Config, error) {
	return clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
}

// Probe asks the API server at cfg for /readyz and returns its version.
func Probe(ctx context.Context, cfg *rest.Config) (string, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	defer hc.CloseIdleConnections()
	get := func(path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			return nil, err
		}
		return hc.Do(req)
	}
	resp, err := get("/readyz")
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/readyz answered %s", resp.Status)
	}
	dc, err := discoveryVersion(cfg, hc)
	if err != nil {
		return "", nil // ready is what matters; the version is a nicety
	}
	return dc, nil
}

// Unjoin deletes the Cluster and its agents' identities, whose tokens the
// control plane refuses from then on, waits up to timeout for
// kfed-controller to finish with it (its finalizer removes kfed's shards
// from the member), then deletes the kubeconfig Secret kfed made for it. A
// Secret kfed did not make is left alone.
func Unjoin(ctx context.Context, fed client.Client, name string, timeout time.Duration) error {
	var c kfedv1alpha1.Cluster
	if err := fed.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no cluster named %q is joined", name)
		}
		return fmt.Errorf("looking up cluster %q: %w", name, err)
	}
	if err := fed.Delete(ctx, &c); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting cluster %q: %w", name, err)
	}
	// No vote of the member's counts once its Cluster is going.
	if err := identity.Remove(ctx, fed, name); err != nil {
		return fmt.Errorf("cluster %q: revoking its agents' identities: %w", name, err)
	}
	// The member's kubeconfig must outlive the finalizer that uses it.
	gone := func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(fed.Get(ctx, client.ObjectKey{Name: name}, &kfedv1alpha1.Cluster{})), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, gone); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cluster %q is still being removed after %v (finalizers %v): is kfed-controller running? "+
			"Its kubeconfig secret %s/%s is kept until it is gone", name, timeout, c.Finalizers,
			c.Spec.KubeconfigSecretRef.Namespace, c.Spec.KubeconfigSecretRef.Name)
	}
	ref := c.Spec.KubeconfigSecretRef
	var s corev1.Secret
	err := fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if !isKubeconfigSecret(&s, name) {
		return nil
	}
	if err := fed.Delete(ctx, &s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return nil
}

// RenewKubeconfig replaces the kubeconfig kfed stored for the joined cluster
// name with member, once member reaches the cluster. It changes only a
// Secret kfed made for that cluster.
func RenewKubeconfig(ctx context.Context, fed client.Client, name string, member *clientcmdapi.Config) error {
	var c kfedv1alpha1.Cluster
	if err := fed.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
		return fmt.Errorf("looking up cluster %q: %w", name, err)
	}
	cfg, err := RESTConfig(member)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := Probe(pctx, cfg); err != nil {
		return fmt.Errorf("the new token does not reach cluster %q: %w", name, err)
	}
	ref := c.Spec.KubeconfigSecretRef
	var s corev1.Secret
	if err := fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return fmt.Errorf("kubeconfig secret of cluster %q: %w", name, err)
	}
	if !isKubeconfigSecret(&s, name) {
		return fmt.Errorf("secret %s/%s was not made by kfed join for cluster %q; it is left alone", s.Namespace, s.Name, name)
	}
	data, err := clientcmd.Write(*member)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	key := cmp.Or(ref.Key, kfedv1alpha1.DefaultKubeconfigKey)
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[key] = data
	if err := fed.Update(ctx, &s); err != nil {
		return fmt.Errorf("updating secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	// kfed-controller reloads the member on the Secret's change; the mark
	// records when it was renewed.
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[kfedv1alpha1.AnnotationKubeconfigRenewed] = time.Now().UTC().Format(time.RFC3339)
	if err := fed.Patch(ctx, &c, patch); err != nil {
		return fmt.Errorf("marking cluster %q renewed: %w", name, err)
	}
	return nil
}

// isKubeconfigSecret reports whether s is the kubeconfig Secret Join made for
// cluster name: the only Secret kfed changes or deletes.
func isKubeconfigSecret(s *corev1.Secret, name string) bool {
	return s.Labels[kfedv1alpha1.LabelManagedBy] == kfedv1alpha1.ManagedBy && s.Labels[kfedv1alpha1.LabelCluster] == name
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func discoveryVersion(cfg *rest.Config, hc *http.Client) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}
