package dns

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// dnsSyncIncrementalPassesLeaveBINDAsAFullPlanWould
// (TestDNSSyncIncrementalPassesLeaveBINDAsAFullPlanWould): the passes that
// plan only the names of the DNSEndpoints that changed (added, changed,
// removed; names two of them share; names someone else holds) leave BIND,
// every DNSEndpoint's status and the records kfed does not own exactly as a
// full plan of the same DNSEndpoints would. Its DNSEndpoints are in
// namespace default, the one trustDefault trusts; it is the only test on its
// bed to use it.
func dnsSyncIncrementalPassesLeaveBINDAsAFullPlanWould(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	bed := newDNSSyncBed(t, f, zone)
	srv, ctx, prov, reg := bed.bind, bed.ctx, bed.prov, bed.reg
	other, err := dnsprovider.NewRegistry("other", "")
	if err != nil {
		t.Fatal(err)
	}

	// Records kfed does not own: an address without a mark, and a name
	// another federation owns.
	name := func(label string) string { return label + "." + zone }
	foreign := []dnsprovider.RecordSet{
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: name("taken"), Type: "A", TTL: 300, Targets: []string{"192.0.2.10"}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: name("theirs"), Type: "A", TTL: 300, Targets: []string{"192.0.2.11"}}),
		other.Record(name("theirs"), dnsprovider.Mark{Owner: "other", Types: []string{"A"}}, 300),
	}
	zones, err := prov.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := zones[0].NewChangeset()
	for _, r := range foreign {
		cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: r, Group: r.Name})
	}
	if err := cs.Apply(ctx); err != nil {
		t.Fatal(err)
	}

	var logs process.Output
	sc := &dnssync.Controller{
		Syncer: &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}},
		Fed:    bed.cl, Cache: bed.cache, Federation: "fed", Interval: 300 * time.Millisecond, Debounce: 100 * time.Millisecond, Metrics: bed.metrics,
		// The test's records are hand-written names, from a namespace the
		// operator trusts with them.
		Tenancy: trustDefault,
		Logger:  textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(1), textlogger.Output(io.MultiWriter(framework.LogWriter(t), &logs)))),
	}
	bed.start(sc)

	fed := f.Client("federation")
	labels := map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "fed"}
	endpoint := func(n string, records map[string]string) *extdnsv1alpha1.DNSEndpoint {
		ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n, Labels: labels}}
		for _, label := range slices.Sorted(maps.Keys(records)) {
			ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: name(label), RecordType: "A", Targets: []string{records[label]}, RecordTTL: 60})
		}
		return ep
	}
	create := func(eps ...*extdnsv1alpha1.DNSEndpoint) {
		t.Helper()
		for _, ep := range eps {
			fedtest.DeleteAtEnd(t, fed, ep.DeepCopy())
			if err := fed.Create(ctx, ep); err != nil {
				t.Fatal(err)
			}
		}
	}

	// converged checks BIND against a full plan of the DNSEndpoints the API
	// server holds, listed afresh: nothing to change, and each status
	// reporting the conflicts that plan finds, at the current generation.
	converged := func(ctx context.Context) error {
		var list extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &list, client.MatchingLabels(labels)); err != nil {
			return err
		}
		eps := list.Items
		slices.SortFunc(eps, func(a, b extdnsv1alpha1.DNSEndpoint) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
		full := &dnssync.Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}}
		res, err := full.Sync(ctx, dnssync.Desired(trustDefault, eps), true)
		if err != nil {
			return err
		}
		if res.Changes() != 0 {
			return fmt.Errorf("a full plan would still change BIND: %v", res.Plans)
		}
		byResource := map[string][]string{}
		for _, cf := range res.Conflicts() {
			byResource[cf.Resource] = append(byResource[cf.Resource], cf.Name)
		}
		for _, ep := range eps {
			want := slices.Sorted(slices.Values(byResource[ep.Namespace+"/"+ep.Name]))
			if len(ep.Status.Publishers) != 1 || ep.Status.Publishers[0].ObservedGeneration != ep.Generation ||
				!slices.Equal(ep.Status.Publishers[0].Conflicts, want) {
				return fmt.Errorf("%s: status %+v at generation %d, want conflicts %v", ep.Name, ep.Status.Publishers, ep.Generation, want)
			}
		}
		return nil
	}
	answers := func(label string, want ...string) {
		t.Helper()
		if got := srv.Answers(t, name(label), dns.TypeA); !slices.Equal(got, want) {
			t.Errorf("BIND answers %s A %v, want %v", name(label), got, want)
		}
	}

	a := endpoint("a", map[string]string{"a": "127.1.0.1", "shared": "127.1.0.1"})
	b := endpoint("b", map[string]string{"b": "127.2.0.1", "shared": "127.2.0.1"})
	cc := endpoint("c", map[string]string{"c": "127.3.0.1", "taken": "127.3.0.1"})
	d := endpoint("d", map[string]string{"d": "127.4.0.1"})
	e := endpoint("e", map[string]string{"e": "127.5.0.1"})
	create(a, b, cc, d, e)
	framework.Eventually(t, 30*time.Second, converged)
	answers("shared", "127.1.0.1", "127.2.0.1")
	answers("taken", "192.0.2.10")

	steps := []struct {
		name  string
		do    func(t *testing.T)
		check func(t *testing.T)
	}{
		{"a DNSEndpoint sharing a name is deleted: its names go, the other's stay", func(t *testing.T) {
			if err := fed.Delete(ctx, a); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T) {
			answers("a")
			answers("shared", "127.2.0.1")
		}},
		{"one stops asking for a name someone else holds and moves its address", func(t *testing.T) {
			if err := fed.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
				t.Fatal(err)
			}
			cc.Spec.Endpoints = []extdnsv1alpha1.Endpoint{{DNSName: name("c"), RecordType: "A", Targets: []string{"127.3.0.2"}, RecordTTL: 60}}
			if err := fed.Update(ctx, cc); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T) {
			answers("c", "127.3.0.2")
			answers("taken", "192.0.2.10")
		}},
		{"a new one asks for the shared name and a name another federation owns", func(t *testing.T) {
			create(endpoint("f", map[string]string{"shared": "127.6.0.1", "theirs": "127.6.0.1"}))
		}, func(t *testing.T) {
			answers("shared", "127.2.0.1", "127.6.0.1")
			answers("theirs", "192.0.2.11")
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			// Let the controller see it first: converged alone would pass
			// before the informer delivers the change.
			time.Sleep(time.Second)
			framework.Eventually(t, 30*time.Second, converged)
			st.check(t)
		})
	}

	for _, r := range foreign {
		var found bool
		rrs, err := srv.Transfer()
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range rrs {
			h := rr.Header()
			if strings.TrimSuffix(strings.ToLower(h.Name), ".") == r.Name && dns.TypeToString[h.Rrtype] == r.Type && h.Ttl == uint32(r.TTL) {
				found = true
			}
		}
		if !found {
			t.Errorf("the record kfed does not own %s is gone", r)
		}
	}
	// The changes went out in passes that planned only some names.
	if n := len(regexp.MustCompile(`changes=[1-9][0-9]* listed=0 full=false`).FindAllString(logs.String(), -1)); n == 0 {
		t.Errorf("no pass that changed BIND planned only some names")
	} else {
		t.Logf("%d passes changed BIND planning only some names", n)
	}
}

// trustDefault is federation fed's tenancy rule with namespace default
// trusted with names that are no namespace's: the hand-written records of the
// DNS sync tests.
var trustDefault = tenancy.NewEndpoints("fed", []string{"default"})
