package check

// kfed check's reads: the facts each check judges (eval.go).

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/internal/buildinfo"
)

// checkTimeout bounds each member's and each DNS server's answers.
const checkTimeout = 3 * time.Second

// Options are what Run checks and where.
type Options struct {
	// Config is the control plane's; Context names it in hints.
	Config  *rest.Config
	Context string
	// Pre checks only what an install needs.
	Pre bool
	// Namespace is kfed's, in the control plane and the members.
	Namespace string
	// Federation is the one whose checkers count; "" counts every checker.
	Federation string
	// Domain is the federation's DNS zone.
	Domain string
	// DNS are the members' CoreDNS addresses by cluster name; a member
	// without one is asked at its kfed-coredns Service.
	DNS map[string]string
}

// Run reads the world and judges it; a control plane that cannot be
// reached is the one failure after which nothing else is checked.
func Run(ctx context.Context, o Options) []Result {
	cfg, name := rest.CopyConfig(o.Config), o.Context
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return []Result{fail("api", "give --kubeconfig and --context", "%v", err)}
	}
	v, err := dc.ServerVersion()
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return []Result{fail("api", fmt.Sprintf("check that it runs and that --context names the federation's context (try: kubectl --context %s get --raw /readyz)", name),
			"the control plane at %s (context %q) does not answer: %v", cfg.Host, name, err)}
	}
	results := []Result{pass("api", "%s answers, Kubernetes %s", cfg.Host, v.GitVersion)}
	scheme, err := kfedscheme.New()
	if err != nil {
		return append(results, fail("api", "", "%v", err))
	}
	fed, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return append(results, fail("api", "", "%v", err))
	}
	if o.Pre {
		return append(results, preChecks(ctx, fed, o.Namespace)...)
	}
	return append(results, installChecks(ctx, fed, o)...)
}

// preChecks are what an install needs: the rights to create kfed's CRDs
// and cluster roles, and its namespace (or the right to create it).
func preChecks(ctx context.Context, fed client.Client, namespace string) []Result {
	var out []Result
	for _, r := range []struct{ group, resource string }{
		{"apiextensions.k8s.io", "customresourcedefinitions"},
		{"rbac.authorization.k8s.io", "clusterroles"},
		{"rbac.authorization.k8s.io", "clusterrolebindings"},
	} {
		out = append(out, evalAccess("rbac/"+r.resource, can(ctx, fed, r.group, r.resource, "create", "")))
	}
	var ns corev1.Namespace
	err := fed.Get(ctx, client.ObjectKey{Name: namespace}, &ns)
	switch {
	case err == nil:
		out = append(out, evalAccess("namespace", can(ctx, fed, "", "secrets", "create", namespace)))
		out[len(out)-1].Message = namespace + " exists; " + out[len(out)-1].Message
	case apierrors.IsNotFound(err):
		out = append(out, evalAccess("namespace", can(ctx, fed, "", "namespaces", "create", "")))
		out[len(out)-1].Message = namespace + " will be created; " + out[len(out)-1].Message
	default:
		out = append(out, fail("namespace", "give your identity get on namespaces", "cannot read namespace %s: %v", namespace, err))
	}
	return out
}

// access is a SelfSubjectAccessReview's question and answer.
type access struct {
	what    string
	allowed bool
	reason  string
	err     error
}

func can(ctx context.Context, fed client.Client, group, resource, verb, namespace string) access {
	what := verb + " " + resource
	if namespace != "" {
		what += " in " + namespace
	}
	r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb, Namespace: namespace},
	}}
	if err := fed.Create(ctx, r); err != nil {
		return access{what: what, err: err}
	}
	return access{what: what, allowed: r.Status.Allowed, reason: r.Status.Reason}
}

func evalAccess(name string, a access) Result {
	switch {
	case a.err != nil:
		return fail(name, "check that the control plane serves SelfSubjectAccessReviews", "cannot ask whether you may %s: %v", a.what, a.err)
	case !a.allowed:
		return fail(name, "install as a cluster admin, or have one grant you "+a.what, "you may not %s %s", a.what, a.reason)
	}
	return pass(name, "you may %s", a.what)
}

// installChecks are the checks of an installed federation.
func installChecks(ctx context.Context, fed client.Client, o Options) []Result {
	now := time.Now()
	var out []Result
	crds := []crdFacts{
		{kind: "Cluster", err: servedErr(fed.List(ctx, &kfedv1alpha1.ClusterList{}, client.Limit(1)))},
		{kind: "HealthReport", err: servedErr(fed.List(ctx, &kfedv1alpha1.HealthReportList{}, client.Limit(1)))},
		{kind: "Balancer", err: servedErr(fed.List(ctx, &kfedv1alpha1.BalancerList{}, client.Limit(1)))},
		{kind: "DNSEndpoint", err: servedErr(fed.List(ctx, &extdnsv1alpha1.DNSEndpointList{}, client.Limit(1)))},
	}
	out = append(out, evalCRDs(crds))
	lease := readLease(ctx, fed, o.Namespace, "kfed-controller")
	out = append(out, evalController(lease, o.Namespace, now), evalVersion(lease, buildinfo.Get().Version))

	var cl kfedv1alpha1.ClusterList
	if err := fed.List(ctx, &cl); err != nil {
		return append(out, fail("clusters", "", "cannot list Clusters: %v", err))
	}
	if len(cl.Items) == 0 {
		out = append(out, warn("clusters", "join a member: kfed join NAME --member-context C", "no member joined"))
	}
	slices.SortFunc(cl.Items, func(a, b kfedv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	published := publishedName(ctx, fed, o.Domain)
	for i := range cl.Items {
		c := &cl.Items[i]
		out = append(out, evalMember(readMember(ctx, fed, c), now))
		member := memberClient(ctx, fed, c)
		out = append(out, evalDNS(queryDNS(ctx, member, o.Namespace, c.Name, o.DNS[c.Name], o.Domain, published), o.Domain))
		out = append(out, evalForward(readForward(ctx, member, c.Name), o.Domain))
	}
	cs, err := readCheckerFacts(ctx, fed, o.Federation, now)
	if err != nil {
		out = append(out, fail("checkers", "give your identity list on healthreports and leases in every namespace (each member's are in kfed-member-NAME)", "%v", err))
	} else {
		out = append(out, evalQuorum(cs))
	}
	pubs, err := readPublishers(ctx, fed)
	switch {
	case err != nil:
		out = append(out, fail("providers", "", "cannot list DNSEndpoints: %v", err))
	case len(pubs) == 0:
		out = append(out, pass("providers", "no DNS provider publishes: the members' CoreDNS serve the zone"))
	}
	for _, p := range pubs {
		out = append(out, evalPublisher(p))
	}
	return out
}

// servedErr is the error of a List that says whether a kind is served:
// nil when it is, even if the caller may not list it.
func servedErr(err error) error {
	if err == nil || apierrors.IsForbidden(err) {
		return nil
	}
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return errors.New("CRD not installed")
	}
	return err
}

func readLease(ctx context.Context, fed client.Client, namespace, name string) leaseFacts {
	var l coordinationv1.Lease
	err := fed.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &l)
	if apierrors.IsNotFound(err) {
		return leaseFacts{}
	}
	if err != nil {
		return leaseFacts{err: err}
	}
	f := leaseFacts{found: true, renewed: renewTime(&l), version: l.Annotations[kfedv1alpha1.AnnotationControllerVersion]}
	if l.Spec.HolderIdentity != nil {
		f.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		f.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return f
}

func renewTime(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// readMember reads a Cluster's Ready condition and its credentials' expiry.
func readMember(ctx context.Context, fed client.Client, c *kfedv1alpha1.Cluster) memberFacts {
	m := memberFacts{name: c.Name}
	if cond := meta.FindStatusCondition(c.Status.Conditions, kfedv1alpha1.ClusterReady); cond != nil {
		m.ready, m.reason, m.message = cond.Status == "True", cond.Reason, cond.Message
	} else {
		m.reason = "no Ready condition yet"
	}
	if c.Spec.ClusterProfileRef != nil {
		m.credKind = "access provider"
		return m
	}
	ref := c.Spec.KubeconfigSecretRef
	var s corev1.Secret
	if err := fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		m.credErr = err
		return m
	}
	m.credKind, m.expires, m.credErr = credentialExpiry(s.Data[ref.KubeconfigKey()])
	return m
}

// credentialExpiry reads a kubeconfig's current user: a bearer token's JWT
// exp claim, or its client certificate's NotAfter (zero when neither says).
func credentialExpiry(kubeconfig []byte) (string, time.Time, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("kubeconfig: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return "", time.Time{}, fmt.Errorf("kubeconfig has no user for context %q", cfg.CurrentContext)
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	switch {
	case user.Token != "":
		exp, err := tokenExpiry(user.Token)
		return "token", exp, err
	case len(user.ClientCertificateData) > 0:
		block, _ := pem.Decode(user.ClientCertificateData)
		if block == nil {
			return "client certificate", time.Time{}, errors.New("client certificate is not PEM")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "client certificate", time.Time{}, fmt.Errorf("client certificate: %w", err)
		}
		return "client certificate", cert.NotAfter, nil
	}
	return "", time.Time{}, nil
}

// tokenExpiry is a JWT's exp claim; zero for a token that is not a JWT or
// has none (a legacy ServiceAccount token never expires).
func tokenExpiry(token string) (time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, fmt.Errorf("token payload: %w", err)
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, fmt.Errorf("token claims: %w", err)
	}
	if claims.Exp == nil {
		return time.Time{}, nil
	}
	return time.Unix(*claims.Exp, 0), nil
}

// memberClient is a client for the member, or nil when it cannot be made.
func memberClient(ctx context.Context, fed client.Client, c *kfedv1alpha1.Cluster) client.Client {
	cfg, _, err := clusters.LoadRESTConfig(ctx, fed, c)
	if err != nil {
		return nil
	}
	cfg.Timeout = checkTimeout
	mc, err := client.New(cfg, client.Options{Scheme: fed.Scheme()})
	if err != nil {
		return nil
	}
	return mc
}

// publishedName is a name some DNSEndpoint publishes in zone: the first
// of them in name order, "" when there is none.
func publishedName(ctx context.Context, fed client.Client, zone string) string {
	var eps extdnsv1alpha1.DNSEndpointList
	if zone == "" || fed.List(ctx, &eps) != nil {
		return ""
	}
	zone = strings.TrimSuffix(zone, ".")
	var names []string
	for _, ep := range eps.Items {
		for _, e := range ep.Spec.Endpoints {
			if (e.RecordType == "A" || e.RecordType == "AAAA" || e.RecordType == "CNAME") && strings.HasSuffix(e.DNSName, "."+zone) {
				names = append(names, e.DNSName)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	// A Service's global name (S.N.F.svc.ZONE) first, the fewest labels
	// first: a name every member answers, not one cluster's.
	notService := func(n string) int {
		if strings.HasSuffix(n, ".svc."+zone) {
			return 0
		}
		return 1
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(notService(a), notService(b)),
			cmp.Compare(dns.CountLabel(a), dns.CountLabel(b)), strings.Compare(a, b))
	})
	return names[0]
}

// queryDNS finds the member's CoreDNS (given, or its kfed-coredns
// Service's address) and asks it for zone's SOA and name's A records.
func queryDNS(ctx context.Context, member client.Client, namespace, cluster, addr, zone, name string) dnsFacts {
	d := dnsFacts{cluster: cluster, addr: addr, source: "given"}
	if addr == "" && member != nil {
		var svc corev1.Service
		err := member.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kfed-coredns"}, &svc)
		switch {
		case err != nil:
			d.source = fmt.Sprintf("no Service %s/kfed-coredns: %v", namespace, apierrors.ReasonForError(err))
		case len(svc.Status.LoadBalancer.Ingress) > 0 && svc.Status.LoadBalancer.Ingress[0].IP != "":
			d.addr, d.source = net.JoinHostPort(svc.Status.LoadBalancer.Ingress[0].IP, "53"), "Service load balancer"
		case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
			d.addr, d.source = net.JoinHostPort(svc.Spec.ClusterIP, "53"), sourceClusterIP
		}
	}
	if d.addr == "" || zone == "" {
		return d
	}
	c := &dns.Client{Timeout: checkTimeout}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := c.ExchangeContext(ctx, q, d.addr)
	switch {
	case err != nil:
		d.soaErr = err
		return d
	case r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0:
		d.soaErr = fmt.Errorf("answered %s with %d records", dns.RcodeToString[r.Rcode], len(r.Answer))
		return d
	}
	if d.name = name; name == "" {
		return d
	}
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err = c.ExchangeContext(ctx, q, d.addr)
	switch {
	case err != nil:
		d.nameErr = err
	case r.Rcode != dns.RcodeSuccess:
		d.nameErr = fmt.Errorf("answered %s", dns.RcodeToString[r.Rcode])
	default:
		d.answers = len(r.Answer)
	}
	return d
}

// readForward reads the member's cluster DNS configuration.
func readForward(ctx context.Context, member client.Client, cluster string) forwardFacts {
	f := forwardFacts{cluster: cluster}
	if member == nil {
		f.err = errors.New("the member cannot be reached")
		return f
	}
	var cm corev1.ConfigMap
	err := member.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		f.err = err
	default:
		f.found, f.corefile = true, cm.Data["Corefile"]
	}
	return f
}

// readCheckerFacts reads federation's checkers (every checker when
// federation is ""): a HealthReport each that holds a seat of its cluster,
// and its heartbeat Lease beside it.
func readCheckerFacts(ctx context.Context, fed client.Client, federation string, now time.Time) ([]checkerFacts, error) {
	var opts []client.ListOption
	if federation != "" {
		opts = append(opts, client.MatchingLabels{kfedv1alpha1.LabelFederation: federation})
	}
	var reports kfedv1alpha1.HealthReportList
	if err := fed.List(ctx, &reports, opts...); err != nil {
		return nil, fmt.Errorf("listing health reports: %w", err)
	}
	var clusters kfedv1alpha1.ClusterList
	if err := fed.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	var leases coordinationv1.LeaseList
	if err := fed.List(ctx, &leases, append(opts, client.HasLabels{kfedv1alpha1.LabelChecker})...); err != nil {
		return nil, fmt.Errorf("listing checker heartbeats: %w", err)
	}
	byName := map[string]*coordinationv1.Lease{}
	for i := range leases.Items {
		byName[kfedv1alpha1.CheckerName(leases.Items[i].Namespace, leases.Items[i].Name)] = &leases.Items[i]
	}
	counted, _ := kfedv1alpha1.Seats(reports.Items, clusters.Items)
	out := make([]checkerFacts, 0, len(counted))
	for _, r := range counted {
		c := checkerFacts{name: r.Checker, degraded: r.Degraded}
		if l := byName[r.Checker]; l != nil && !renewTime(l).IsZero() {
			c.heartbeat, c.age = true, now.Sub(renewTime(l))
			c.duration = 40 * time.Second // the agents' default: four 10 s heartbeats
			if l.Spec.LeaseDurationSeconds != nil {
				c.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// readPublishers gathers, per provider, what the DNS sync recorded on the
// DNSEndpoints' status.
func readPublishers(ctx context.Context, fed client.Client) ([]publisherFacts, error) {
	var eps extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &eps); err != nil {
		return nil, err
	}
	by := map[string]*publisherFacts{}
	for _, ep := range eps.Items {
		for _, p := range ep.Status.Publishers {
			pf := by[p.Provider]
			if pf == nil {
				pf = &publisherFacts{provider: p.Provider}
				by[p.Provider] = pf
			}
			pf.endpoints++
			if p.ObservedGeneration < ep.Generation {
				pf.behind = append(pf.behind, ep.Namespace+"/"+ep.Name+" (generation "+strconv.FormatInt(ep.Generation, 10)+")")
			}
			pf.conflicts = append(pf.conflicts, p.Conflicts...)
		}
	}
	out := make([]publisherFacts, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b publisherFacts) int { return strings.Compare(a.provider, b.provider) })
	return out, nil
}
