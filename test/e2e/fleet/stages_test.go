package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/framework"
)

// stages watches the Services named with a prefix on their way from
// created to answered: when every member has its copy (the controller's
// writes), when every copy has its load-balancer address (the members'
// part), when their DNSEndpoint first has every
// member's address (the controller's part, which waits for the first), and
// how many times the DNSEndpoint was written. What is left of the time to
// an answer everywhere is the DNS servers'.
type stages struct {
	n      int
	prefix string

	mu       sync.Mutex
	made     map[string]int       // name → members with a copy
	madeDone map[string]time.Time // name → when the last member's copy was made
	lbs      map[string]int       // name → members whose copy has its address
	lbDone   map[string]time.Time // name → when the last member's did
	rowsDone map[string]time.Time // name → when the DNSEndpoint had every member's
	writes   map[string]int       // name → DNSEndpoint writes seen
}

// watchStages starts watching, from now, the copies in every member and the
// DNSEndpoints in the control plane, until ctx ends.
func watchStages(ctx context.Context, t *testing.T, f *fleet, prefix string) *stages {
	t.Helper()
	s := &stages{
		n: len(f.d.Members), prefix: prefix,
		made: map[string]int{}, madeDone: map[string]time.Time{}, lbs: map[string]int{}, lbDone: map[string]time.Time{}, rowsDone: map[string]time.Time{}, writes: map[string]int{},
	}
	for _, m := range f.d.Members {
		w := startWatch(ctx, t, m.Config, &corev1.ServiceList{})
		go s.copies(w)
	}
	w := startWatch(ctx, t, f.d.ControlPlane.Config, &extdnsv1alpha1.DNSEndpointList{})
	go s.endpoints(w)
	return s
}

// startWatch watches list's kind in namespace default from now on: from
// the resource version of a list of one, so that what exists already is
// not sent again.
func startWatch(ctx context.Context, t *testing.T, cfg *rest.Config, list client.ObjectList) watch.Interface {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: framework.NewScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, list, client.InNamespace("default"), client.Limit(1)); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, list, &client.ListOptions{Namespace: "default",
		Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// copies counts, for one member, the copies made and those that got
// their address.
func (s *stages) copies(w watch.Interface) {
	defer w.Stop()
	made, addressed := map[string]bool{}, map[string]bool{}
	count := func(seen map[string]bool, name string, counts map[string]int, done map[string]time.Time) {
		if seen[name] {
			return
		}
		seen[name] = true
		s.mu.Lock()
		if counts[name]++; counts[name] == s.n {
			done[name] = time.Now()
		}
		s.mu.Unlock()
	}
	for ev := range w.ResultChan() {
		svc, ok := ev.Object.(*corev1.Service)
		if !ok || !strings.HasPrefix(svc.Name, s.prefix) {
			continue
		}
		count(made, svc.Name, s.made, s.madeDone)
		if len(svc.Status.LoadBalancer.Ingress) > 0 {
			count(addressed, svc.Name, s.lbs, s.lbDone)
		}
	}
}

// endpoints notes each DNSEndpoint write, and when one first has every
// member's address.
func (s *stages) endpoints(w watch.Interface) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(*extdnsv1alpha1.DNSEndpoint)
		if !ok || !strings.HasPrefix(obj.Name, s.prefix) || ev.Type == watch.Deleted {
			continue
		}
		rows, err := dnsendpoint.ReadClusters(obj)
		addressed := 0
		for _, r := range rows {
			if len(r.Addresses) > 0 {
				addressed++
			}
		}
		s.mu.Lock()
		s.writes[obj.Name]++
		if _, done := s.rowsDone[obj.Name]; !done && err == nil && addressed == s.n {
			s.rowsDone[obj.Name] = time.Now()
		}
		s.mu.Unlock()
	}
}

// times are one stage's times from created, sorted; a stage not seen
// counts as the whole wait.
func (s *stages) times(created map[string]time.Time, done map[string]time.Time, wait time.Duration) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for name, c := range created {
		d := wait
		if t, ok := done[name]; ok {
			d = t.Sub(c)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// medianWrites is the median count of DNSEndpoint writes a Service had.
func (s *stages) medianWrites(created map[string]time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []int
	for name := range created {
		ws = append(ws, s.writes[name])
	}
	slices.Sort(ws)
	return ws[len(ws)/2]
}

// controllerTimes are the federated-service controller's reconciles so
// far: how many, and their total wait in the queue and time reconciling,
// from controller-runtime's metrics in this process, where the bed's
// controller runs.
type controllerTimes struct {
	reconciles      float64
	queued, running float64 // seconds
	// phases are the seconds and counts of each phase of a reconcile
	// (kfed_service_reconcile_phase_seconds).
	phases map[string][2]float64
}

// phasesSince is the mean time of each phase of the reconciles between
// earlier and t, and how many of them ran it.
func (t controllerTimes) phasesSince(earlier controllerTimes) string {
	var out []string
	for _, p := range []string{"open", "observe", "copies", "endpoint", "status"} {
		sum, n := t.phases[p][0]-earlier.phases[p][0], t.phases[p][1]-earlier.phases[p][1]
		if n > 0 {
			out = append(out, fmt.Sprintf("%s=%.3fx%.0f", p, sum/n, n))
		}
	}
	return strings.Join(out, " ")
}

func readControllerTimes(t *testing.T) controllerTimes {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := controllerTimes{phases: map[string][2]float64{}}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case f.GetName() == "workqueue_queue_duration_seconds" && labels["name"] == "federated-service":
				out.queued = m.GetHistogram().GetSampleSum()
			case f.GetName() == "kfed_service_reconcile_phase_seconds":
				out.phases[labels["phase"]] = [2]float64{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
			case f.GetName() == "controller_runtime_reconcile_time_seconds" && labels["controller"] == "federated-service":
				out.running = m.GetHistogram().GetSampleSum()
				out.reconciles = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
