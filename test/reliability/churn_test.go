package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func churnName(i int) string  { return fmt.Sprintf("svc-%04d", i) }
func stableName(i int) string { return fmt.Sprintf("stable-%02d", i) }

// spec is what the suite last wrote of one Service.
type spec struct {
	ttl      int      // kfed.io/ttl
	port     int32    // the one port
	clusters []string // kfed.io/clusters; nil: every member
}

func (s spec) service(name string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Selector:          map[string]string{"app": name},
		},
	}
	s.apply(svc)
	return svc
}

func (s spec) apply(svc *corev1.Service) {
	if s.ttl != 0 {
		svc.Annotations[kfedv1alpha1.AnnotationTTL] = strconv.Itoa(s.ttl)
	} else {
		delete(svc.Annotations, kfedv1alpha1.AnnotationTTL)
	}
	if s.clusters != nil {
		svc.Annotations[kfedv1alpha1.AnnotationClusters] = strings.Join(s.clusters, ",")
	} else {
		delete(svc.Annotations, kfedv1alpha1.AnnotationClusters)
	}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: s.port, TargetPort: intstr.FromInt32(s.port)}}
}

// churn writes Services as users do — create, update (TTL and port),
// placement changes, delete — and remembers the last write of each, so that
// the checker can tell a lost change. A write whose outcome is unknown (the
// API server went away during it) makes that Service uncertain until its
// next successful write: then what the control plane holds is the truth.
type churn struct {
	b       *bed
	members []string

	mu        sync.Mutex
	rng       *rand.Rand
	want      map[string]*spec // nil value: deleted
	uncertain map[string]bool
	ops       map[string]int
	failed    int
}

func newChurn(b *bed) *churn {
	c := &churn{b: b, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16)),
		want: map[string]*spec{}, uncertain: map[string]bool{}, ops: map[string]int{}}
	for _, m := range b.f.Members {
		c.members = append(c.members, m.Name)
	}
	return c
}

func (c *churn) randomSpec() *spec {
	s := &spec{ttl: 30 + c.rng.IntN(570), port: 8000 + int32(c.rng.IntN(1000))}
	if c.rng.IntN(3) == 0 {
		s.clusters = c.randomClusters()
	}
	return s
}

func (c *churn) randomClusters() []string {
	var out []string
	for _, m := range c.members {
		if c.rng.IntN(2) == 0 {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = []string{c.members[c.rng.IntN(len(c.members))]}
	}
	return out
}

// createAll creates the stable and the churned Services.
func (c *churn) createAll(ctx context.Context) error {
	for i := range c.b.form.stable {
		if err := c.b.fed.Create(ctx, spec{port: 8080}.service(stableName(i))); err != nil {
			return err
		}
	}
	for i := range c.b.form.services {
		c.mu.Lock()
		s := c.randomSpec()
		c.mu.Unlock()
		if err := c.b.fed.Create(ctx, s.service(churnName(i))); err != nil {
			return err
		}
		c.mu.Lock()
		c.want[churnName(i)] = s
		c.ops["create"]++
		c.mu.Unlock()
	}
	return nil
}

// run writes one change every interval until ctx ends.
func (c *churn) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.step(ctx)
	}
}

// step writes one random change.
func (c *churn) step(ctx context.Context) {
	c.mu.Lock()
	name := churnName(c.rng.IntN(c.b.form.services))
	cur := c.want[name]
	var op string
	var next *spec
	switch r := c.rng.IntN(10); {
	case cur == nil:
		op, next = "create", c.randomSpec()
	case r < 4:
		s := *cur
		s.ttl, s.port = 30+c.rng.IntN(570), 8000+int32(c.rng.IntN(1000))
		op, next = "update", &s
	case r < 7:
		s := *cur
		if s.clusters != nil && c.rng.IntN(3) == 0 {
			s.clusters = nil
		} else {
			s.clusters = c.randomClusters()
		}
		op, next = "place", &s
	default:
		op = "delete"
	}
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fed := c.b.fed
	var err error
	switch op {
	case "create":
		err = fed.Create(ctx, next.service(name))
	case "delete":
		err = fed.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	default:
		var svc corev1.Service
		if err = fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err == nil {
			if svc.DeletionTimestamp != nil {
				return // still going: not a write
			}
			next.apply(&svc)
			err = fed.Update(ctx, &svc)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.want[name] = next
		delete(c.uncertain, name)
		c.ops[op]++
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
		// Refused: nothing was written. (A create may meet a Service
		// still being deleted.)
		c.failed++
	default:
		// Timed out or cut off: it may or may not have been written.
		c.uncertain[name] = true
		c.failed++
	}
}

// counts returns the writes made, by kind, and those refused or cut off.
func (c *churn) counts() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := map[string]int{}
	for k, v := range c.ops {
		ops[k] = v
	}
	return ops, c.failed
}

// expected returns the last write of every churned Service whose last write
// is known; deleted ones are nil.
func (c *churn) expected() map[string]*spec {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*spec{}
	for k, v := range c.want {
		if !c.uncertain[k] {
			out[k] = v
		}
	}
	return out
}

// during runs churn for as long as fn takes.
func (c *churn) during(fn func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx, c.b.form.churn) }()
	defer func() { cancel(); <-done }() // fn may end its test with t.Fatal
	fn()
}

func sortedClusters(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
