package reliability

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/placement"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// check is the one invariant checker, called after every scenario: within
// the form's bound, the state converges to what the Services imply, in the
// control plane, the members, CoreDNS and every provider; then no process
// may have panicked. It returns how long convergence took.
func (b *bed) check(t *testing.T, scenario string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(b.form.converge)
	logged := start
	var err error
	for {
		// Listing a zone of tens of thousands of record sets page by page
		// takes a while on a loaded machine: the bound is the form's.
		ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Minute))
		err = b.converged(ctx)
		if err == nil {
			err = b.published(ctx)
		}
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		if time.Since(logged) > time.Minute {
			t.Logf("%s: not converged after %v: %v", scenario, time.Since(start).Round(time.Second), err)
			logged = time.Now()
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(start)
	if err != nil {
		msg := fmt.Sprintf("%s: not converged after %v: %v", scenario, b.form.converge, err)
		t.Error(msg)
		b.mu.Lock()
		b.failures = append(b.failures, msg)
		b.mu.Unlock()
	} else {
		b.figure(scenario, "converged in %v", took.Round(100*time.Millisecond))
	}
	if c := crashes(b.logs()); len(c) > 0 {
		t.Errorf("%s: a process panicked:\n%s", scenario, strings.Join(c, "\n"))
	}
	return took
}

// shardView is what a member holds of one Service.
type shardView struct {
	ips        []netip.Addr
	clusterIPs []netip.Addr
	ports      []dnsendpoint.Port
}

// converged checks the control plane, the members and CoreDNS against the
// Services: the last write of each churned Service is stored; each Service
// has shards exactly in the members it is placed in and a DNSEndpoint whose
// cluster table, TTL and global name follow from the shards; no shard and
// no DNSEndpoint is left without its Service; CoreDNS answers what the
// DNSEndpoints say.
func (b *bed) converged(ctx context.Context) error {
	var svcs corev1.ServiceList
	if err := b.fed.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
		return err
	}
	byName := map[string]*corev1.Service{}
	for i := range svcs.Items {
		byName[svcs.Items[i].Name] = &svcs.Items[i]
	}
	// No change lost in the control plane.
	for name, want := range b.churn.expected() {
		svc := byName[name]
		if want == nil {
			if svc != nil {
				return fmt.Errorf("%s was deleted and is still there (deleting: %v)", name, svc.DeletionTimestamp != nil)
			}
			continue
		}
		if svc == nil {
			return fmt.Errorf("%s: the last write created or updated it, and it is gone", name)
		}
		got := spec{port: svc.Spec.Ports[0].Port}
		got.ttl, _ = strconv.Atoi(svc.Annotations[kfedv1alpha1.AnnotationTTL])
		if v, ok := svc.Annotations[kfedv1alpha1.AnnotationClusters]; ok {
			got.clusters = strings.Split(v, ",")
		}
		if !reflect.DeepEqual(got, *want) {
			return fmt.Errorf("%s holds %+v, the last write was %+v", name, got, *want)
		}
	}

	// Shards in every member.
	shards := map[string]map[string]shardView{} // member → Service → shard
	for _, m := range b.f.Members {
		var list corev1.ServiceList
		if err := b.f.Client(m.Name).List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{kfedv1alpha1.LabelFederation: federation}); err != nil {
			return fmt.Errorf("listing shards in %s: %w", m.Name, err)
		}
		shards[m.Name] = map[string]shardView{}
		for _, s := range list.Items {
			var v shardView
			for _, ing := range s.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(ing.IP); err == nil {
					v.ips = append(v.ips, a)
				}
			}
			for _, ip := range s.Spec.ClusterIPs {
				if a, err := netip.ParseAddr(ip); err == nil {
					v.clusterIPs = append(v.clusterIPs, a)
				}
			}
			for _, p := range s.Spec.Ports {
				v.ports = append(v.ports, dnsendpoint.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
			}
			shards[m.Name][s.Name] = v
		}
	}

	var eps extdnsv1alpha1.DNSEndpointList
	if err := b.fed.List(ctx, &eps, client.InNamespace(ns)); err != nil {
		return err
	}
	epByName := map[string]*extdnsv1alpha1.DNSEndpoint{}
	for i := range eps.Items {
		epByName[eps.Items[i].Name] = &eps.Items[i]
	}

	expectAnswers := map[string][]string{} // global name → addresses
	for name, svc := range byName {
		if !kfedv1alpha1.IsFederated(svc) {
			continue
		}
		if svc.DeletionTimestamp != nil {
			return fmt.Errorf("%s is still being deleted", name)
		}
		p, err := placement.Parse(svc.Annotations)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		want := map[string]shardView{}
		for _, m := range b.f.Members {
			s, has := shards[m.Name][name]
			placed := p.Places(m.Name, m.Region, nil)
			if has != placed {
				return fmt.Errorf("%s: shard in %s: %v, placed there: %v", name, m.Name, has, placed)
			}
			if placed && len(s.ips) > 0 {
				want[m.Name] = s
			}
		}
		ep := epByName[name]
		if ep == nil {
			return fmt.Errorf("%s has no DNSEndpoint", name)
		}
		table, err := dnsendpoint.ReadClusters(ep)
		if err != nil {
			return fmt.Errorf("DNSEndpoint %s: %w", name, err)
		}
		if got := slices.Sorted(maps.Keys(table)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
			return fmt.Errorf("DNSEndpoint %s has clusters %v, its shards with an address are in %v", name, got, slices.Sorted(maps.Keys(want)))
		}
		var global []string
		for c, s := range want {
			got := table[c]
			if !slices.Equal(sortedAddrs(got.Addresses), sortedAddrs(s.ips)) || !slices.Equal(sortedAddrs(got.ClusterIPs), sortedAddrs(s.clusterIPs)) {
				return fmt.Errorf("DNSEndpoint %s: %s has addresses %v and cluster IPs %v, its shard %v and %v", name, c, got.Addresses, got.ClusterIPs, s.ips, s.clusterIPs)
			}
			if !reflect.DeepEqual(got.Ports, s.ports) {
				return fmt.Errorf("DNSEndpoint %s: %s has ports %v, its shard %v", name, c, got.Ports, s.ports)
			}
			for _, a := range s.ips {
				global = append(global, a.String())
			}
		}
		ttl := int64(publish.DefaultTTL)
		if v := svc.Annotations[kfedv1alpha1.AnnotationTTL]; v != "" {
			n, _ := strconv.Atoi(v)
			ttl = int64(n)
		}
		globalName := publish.NewNames(federation, zone, ns, name).Global()
		var gotGlobal []string
		for _, e := range ep.Spec.Endpoints {
			if e.RecordTTL != ttl {
				return fmt.Errorf("DNSEndpoint %s: %s %s has TTL %d, the Service asks %d", name, e.DNSName, e.RecordType, e.RecordTTL, ttl)
			}
			if e.DNSName == globalName && e.RecordType == "A" {
				gotGlobal = append(gotGlobal, e.Targets...)
			}
		}
		slices.Sort(global)
		slices.Sort(gotGlobal)
		if !slices.Equal(global, gotGlobal) {
			return fmt.Errorf("DNSEndpoint %s: %s A %v, want %v", name, globalName, gotGlobal, global)
		}
		if len(global) > 0 {
			expectAnswers[globalName+"."] = global
		}
	}
	for name := range epByName {
		if svc := byName[name]; svc == nil || !kfedv1alpha1.IsFederated(svc) {
			return fmt.Errorf("DNSEndpoint %s has no federated Service", name)
		}
	}
	for m, byService := range shards {
		for name := range byService {
			if byName[name] == nil {
				return fmt.Errorf("shard %s in %s is orphaned: its Service is gone", name, m)
			}
		}
	}

	// CoreDNS: the stable Services and a sample of the others.
	names := slices.Sorted(maps.Keys(expectAnswers))
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i := range b.form.stable {
		names = append([]string{publish.NewNames(federation, zone, ns, stableName(i)).Global() + "."}, names...)
	}
	for _, name := range names[:min(len(names), 30+b.form.stable)] {
		got, rcode, err := queryA(b.dnsAddr, name)
		if err != nil {
			return fmt.Errorf("CoreDNS: %w", err)
		}
		if want := expectAnswers[name]; !slices.Equal(got, want) {
			return fmt.Errorf("CoreDNS answers %s with %v (%s), the DNSEndpoint says %v", name, got, dns.RcodeToString[rcode], want)
		}
	}
	return nil
}

func sortedAddrs(as []netip.Addr) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}

// queryA asks addr for name's A records over UDP and returns the addresses,
// sorted.
func queryA(addr, name string) ([]string, int, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, 0, fmt.Errorf("A %s: %w", name, err)
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out, r.Rcode, nil
}

// published checks every provider: a fresh plan of the DNSEndpoints against
// a fresh listing has no change (the zone holds exactly what kfed wants of
// the names it owns) and no conflict but the seeded name, and every record
// kfed does not own is there as it was written.
func (b *bed) published(ctx context.Context) error {
	var eps extdnsv1alpha1.DNSEndpointList
	if err := b.fed.List(ctx, &eps, client.MatchingLabels{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: federation}); err != nil {
		return err
	}
	desired := dnssync.Desired(tenancy.NewEndpoints(federation, nil), eps.Items)
	var errs []error
	for _, p := range []dnsprovider.Provider{b.bindProvider(), b.route53Provider(1000), b.cloudDNSProvider()} {
		s := &dnssync.Syncer{Provider: p, Planner: planner(b.t)}
		res, err := s.Sync(ctx, desired, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
			continue
		}
		if n := res.Changes(); n > 0 {
			errs = append(errs, fmt.Errorf("%s: %d changes from what the DNSEndpoints want, first %s", p.Name(), n, firstChange(res)))
		}
		for _, c := range res.Conflicts() {
			if c.Name != b.seeded[3].Name {
				errs = append(errs, fmt.Errorf("%s: conflict at %s: %s", p.Name(), c.Name, c.Reason))
			}
		}
		zones, err := p.Zones(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs, err := zones[0].Records(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		have := map[dnsprovider.Key]dnsprovider.RecordSet{}
		for _, r := range recs {
			have[r.Key()] = r
		}
		for _, want := range b.seeded {
			if got, ok := have[want.Key()]; !ok || !reflect.DeepEqual(got.Targets, want.Targets) || got.TTL != want.TTL {
				errs = append(errs, fmt.Errorf("%s: the record kfed does not own %s %s is %+v, was written %+v", p.Name(), want.Name, want.Type, got, want))
			}
		}
	}
	return errors.Join(errs...)
}

func firstChange(res dnssync.Result) string {
	for _, p := range res.Plans {
		for _, c := range p.Changes {
			return fmt.Sprintf("%v %s %s", c.Action, c.New.Name+c.Old.Name, c.New.Type+c.Old.Type)
		}
	}
	return ""
}
