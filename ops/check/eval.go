package check

// The checks' judgements: facts in, a Result out, no I/O.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

// leaseFacts are what check read of a Lease.
type leaseFacts struct {
	found    bool
	holder   string
	renewed  time.Time
	duration time.Duration
	version  string // the controller's, from kfedv1alpha1.AnnotationVersion
	err      error
}

// evalController judges the controller's leader-election Lease: held and
// renewed within its duration.
func evalController(l leaseFacts, namespace string, now time.Time) Result {
	const name = "controller"
	hint := "see the kfed-controller pods' logs (kubectl -n " + namespace + " logs deploy/kfed-controller)"
	switch {
	case l.err != nil:
		return fail(name, "give your identity get on leases in "+namespace, "cannot read Lease %s/kfed-controller: %v", namespace, l.err)
	case !l.found:
		return fail(name, "install or start kfed-controller (see README, Install)", "no Lease %s/kfed-controller: the controller never ran", namespace)
	case l.holder == "":
		return fail(name, hint, "Lease %s/kfed-controller has no holder: no controller leads", namespace)
	}
	age := now.Sub(l.renewed).Round(time.Second)
	if l.renewed.IsZero() || age > l.duration {
		return fail(name, hint, "%s holds the Lease but last renewed it %s ago (lease %s)", l.holder, age, l.duration)
	}
	return pass(name, "%s leads, renewed %s ago", l.holder, age)
}

// evalVersion compares the CLI's version with the one the leading
// controller writes on its Lease.
func evalVersion(l leaseFacts, cli string) Result {
	const name = "version"
	switch {
	case !l.found || l.err != nil:
		return warn(name, "fix the controller check first", "the controller's version is unknown (no Lease)")
	case l.version == "":
		return warn(name, "upgrade kfed-controller: versions that publish it write the annotation on their Lease",
			"the controller does not say its version; the CLI is %s", cli)
	case l.version == buildinfo.Unknown || cli == buildinfo.Unknown:
		return warn(name, "build both with make build, which stamps the version",
			"CLI %s, controller %s: an unstamped build's version is unknown", cli, l.version)
	case l.version != cli:
		return warn(name, "use the CLI of the controller's version, or upgrade the controller",
			"CLI %s, controller %s", cli, l.version)
	}
	return pass(name, "CLI and controller are both %s", cli)
}

// crdFacts say, for each kind check needs, whether the control plane
// serves it (err nil), and why not.
type crdFacts struct {
	kind string
	err  error
}

func evalCRDs(crds []crdFacts) Result {
	const name = "crds"
	var missing []string
	for _, c := range crds {
		if c.err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", c.kind, c.err))
		}
	}
	if len(missing) > 0 {
		return fail(name, "install the CRDs: helm upgrade --install kfed deploy/chart/kfed, or kubectl apply -f deploy/crds",
			"not served: %s", strings.Join(missing, ", "))
	}
	kinds := make([]string, len(crds))
	for i, c := range crds {
		kinds[i] = c.kind
	}
	return pass(name, "served: %s", strings.Join(kinds, ", "))
}

// memberFacts are what check read of a joined Cluster.
type memberFacts struct {
	name    string
	ready   bool
	reason  string // the Ready condition's
	message string
	// credentials are the kubeconfig Secret's: what kind (token, client
	// certificate) and when they expire (zero: unknown or never).
	credKind string
	expires  time.Time
	credErr  error
}

// evalMember judges a member: Ready, and its credentials valid for more
// than credentialWarning.
func evalMember(m memberFacts, now time.Time) Result {
	name := "cluster/" + m.name
	renew := "renew its credentials: kfed join " + m.name + " --renew --service-account NS/NAME, or write a new kubeconfig into its Secret"
	if !m.ready {
		return fail(name, "see kubectl describe cluster "+m.name+" and the member's API server",
			"not Ready: %s %s", m.reason, m.message)
	}
	switch left := m.expires.Sub(now); {
	case m.credErr != nil:
		return warn(name, "check the kubeconfig Secret of the Cluster", "Ready; credentials unreadable: %v", m.credErr)
	case m.expires.IsZero():
		return pass(name, "Ready; %s credentials, no expiry known", cmp.Or(m.credKind, "kubeconfig"))
	case left <= 0:
		return fail(name, renew, "Ready, but its %s expired %s ago", m.credKind, (-left).Round(time.Minute))
	case left < credentialWarning:
		return warn(name, renew, "Ready; its %s expires in %s (%s)", m.credKind, days(left), m.expires.UTC().Format(time.DateOnly))
	default:
		return pass(name, "Ready; %s valid for %s", m.credKind, days(left))
	}
}

func days(d time.Duration) string {
	if d < 48*time.Hour {
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// sourceClusterIP is dnsFacts.source when the address is the member's
// kfed-coredns Service's cluster IP.
const sourceClusterIP = "Service cluster IP"

// dnsFacts are one member's CoreDNS as check queried it.
type dnsFacts struct {
	cluster, addr, source string
	soaErr                error
	// name is a published name queried there ("" when none is
	// published); answers its answer records, nameErr the query's error.
	name    string
	answers int
	nameErr error
}

// evalDNS judges a member's CoreDNS: it answers the zone's SOA, and a
// published name with records.
func evalDNS(d dnsFacts, zone string) Result {
	name := "coredns/" + d.cluster
	hint := "see the member's kfed-coredns pods (kubectl -n kfed-system get pods -l app.kubernetes.io/name=kfed-coredns) or give its address with --dns " + d.cluster + "=ADDR"
	switch {
	case zone == "":
		return warn(name, "give the zone with --domain or $KFED_DOMAIN", "not checked: no zone")
	case d.addr == "":
		return warn(name, "give its address with --dns "+d.cluster+"=ADDR", "no CoreDNS address known (%s)", cmp.Or(d.source, "no kfed-coredns Service"))
	case d.soaErr != nil && d.source == sourceClusterIP:
		// A cluster IP is seldom reachable from where kfed check runs: not
		// answering there says nothing about CoreDNS.
		return warn(name, "give an address reachable from here with --dns "+d.cluster+"=ADDR (kubectl port-forward svc/kfed-coredns, or run kfed check in the member)",
			"%s (the kfed-coredns Service's cluster IP) does not answer from here: %v", d.addr, d.soaErr)
	case d.soaErr != nil:
		return fail(name, hint, "%s does not answer the SOA of %s: %v", d.addr, zone, d.soaErr)
	case d.name == "":
		return pass(name, "%s answers the SOA of %s; no published name to ask", d.addr, zone)
	case d.nameErr != nil:
		return fail(name, hint, "%s answers the SOA but not %s: %v", d.addr, d.name, d.nameErr)
	case d.answers == 0:
		return warn(name, "kfed status shows which endpoints are published and healthy",
			"%s answers the SOA but %s with no records", d.addr, d.name)
	}
	return pass(name, "%s answers the SOA of %s and %s (%d records)", d.addr, zone, d.name, d.answers)
}

// forwardFacts are a member's cluster DNS configuration.
type forwardFacts struct {
	cluster  string
	found    bool // kube-system/coredns exists
	corefile string
	err      error
}

// evalForward judges whether the member's cluster DNS sends the zone to
// kfed's CoreDNS: its Corefile has a server block for the zone.
func evalForward(f forwardFacts, zone string) Result {
	name := "forward/" + f.cluster
	hint := "add a server block `" + zone + ":53 { forward . <kfed-coredns ClusterIP> }` to kube-system/coredns (README, DNS inside the clusters)"
	switch {
	case zone == "":
		return warn(name, "give the zone with --domain or $KFED_DOMAIN", "not checked: no zone")
	case f.err != nil:
		return warn(name, "give your identity get on configmaps in kube-system", "cannot read kube-system/coredns: %v", f.err)
	case !f.found:
		return warn(name, "if the member's cluster DNS is not CoreDNS, forward "+zone+" to kfed-coredns there",
			"no kube-system/coredns ConfigMap: pods may not resolve %s", zone)
	case !forwardsZone(f.corefile, zone):
		return fail(name, hint, "kube-system/coredns has no server block for %s: pods cannot resolve it", zone)
	}
	return pass(name, "kube-system/coredns serves %s", zone)
}

// forwardsZone reports whether a Corefile has a server block whose keys
// name zone (or a zone it lies in, "." aside).
func forwardsZone(corefile, zone string) bool {
	zone = strings.TrimSuffix(strings.ToLower(zone), ".")
	for _, line := range strings.Split(corefile, "\n") {
		line = strings.TrimSpace(line)
		head, ok := strings.CutSuffix(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		for _, key := range strings.Fields(strings.ReplaceAll(head, ",", " ")) {
			key = strings.TrimPrefix(strings.ToLower(key), "dns://")
			key, _, _ = strings.Cut(key, ":")
			key = strings.TrimSuffix(key, ".")
			if key != "" && (zone == key || strings.HasSuffix(zone, "."+key)) {
				return true
			}
		}
	}
	return false
}

// checkerFacts are a checker as check read it: its HealthReport and the
// age of its heartbeat Lease against the Lease's own duration.
type checkerFacts struct {
	name      string
	heartbeat bool // it has a heartbeat Lease
	age       time.Duration
	duration  time.Duration
	degraded  bool
}

// evalQuorum judges the checkers as the quorum rule does (docs/design.md,
// healthcheck.Verdict): verdicts change only while at least ⌊N/2⌋+1 of the
// N configured checkers are fresh and not degraded.
func evalQuorum(cs []checkerFacts) Result {
	const name = "checkers"
	if len(cs) == 0 {
		return warn(name, "run a kfed-healthcheck agent in each member (the chart's member release does)",
			"no checkers: every endpoint counts as healthy")
	}
	quorum := len(cs)/2 + 1
	var voters int
	var stale, degraded []string
	for _, c := range cs {
		switch {
		case !c.heartbeat || c.age >= c.duration:
			stale = append(stale, c.name)
		case c.degraded:
			degraded = append(degraded, c.name)
		default:
			voters++
		}
	}
	slices.Sort(stale)
	slices.Sort(degraded)
	detail := ""
	if len(stale) > 0 {
		detail += "; stale: " + strings.Join(stale, ", ")
	}
	if len(degraded) > 0 {
		detail += "; degraded: " + strings.Join(degraded, ", ")
	}
	if voters < quorum {
		return fail(name, "see the kfed-healthcheck pods of the stale checkers; verdicts are frozen until a quorum is back",
			"quorum lost: %d of %d checkers vote, %d needed%s", voters, len(cs), quorum, detail)
	}
	if detail != "" {
		return warn(name, "see the kfed-healthcheck pods of the checkers named", "%d of %d checkers vote (quorum %d)%s", voters, len(cs), quorum, detail)
	}
	return pass(name, "%d of %d checkers vote (quorum %d)", voters, len(cs), quorum)
}

// publisherFacts are what one DNS provider's sync recorded on the
// DNSEndpoints: those whose current generation it has not published, and
// the names it left alone because records kfed does not own hold them.
type publisherFacts struct {
	provider  string
	endpoints int
	behind    []string
	conflicts []string
}

// evalPublisher judges one provider's sync.
func evalPublisher(p publisherFacts) Result {
	name := "provider/" + p.provider
	switch {
	case len(p.behind) > 0:
		return fail(name, "see kfed-controller's logs and kfed_dns_sync_* metrics for the provider's error (credentials, zone, throttling)",
			"%d of %d DNSEndpoints not published at their current generation: %s", len(p.behind), p.endpoints, firstFew(p.behind))
	case len(p.conflicts) > 0:
		return warn(name, "delete the records kfed does not own, or give their owner TXT record kfed's --owner-id",
			"names held by records kfed does not own, left alone: %s", firstFew(p.conflicts))
	}
	return pass(name, "%d DNSEndpoints published, every name owned", p.endpoints)
}

func firstFew(s []string) string {
	s = slices.Sorted(slices.Values(s))
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + fmt.Sprintf(" and %d more", len(s)-3)
	}
	return strings.Join(s, ", ")
}
