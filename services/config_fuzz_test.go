package services

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/healthcheck"
)

// FuzzParseConfig feeds arbitrary values of every annotation a federated
// Service is read with: kfed.io/ttl, the placement pair and a health check
// (present says which exist: bit 0 TTL, 1 clusters, 2 selector, 3 health
// check, 4 health interval). parseConfig must not panic; an accepted TTL is
// the value given and within the bounds, an absent one the default; a TTL
// error names the annotation; the health annotations are carried exactly;
// and the same Service reads the same twice.
func FuzzParseConfig(f *testing.F) {
	f.Add(uint8(0x1f), "300", "c1,c2", "tier=gold", "http /healthz", "10s")
	f.Add(uint8(0x01), " 60 ", "", "", "", "")
	f.Add(uint8(0x01), "604801", "", "", "", "")
	f.Add(uint8(0x01), "-1", "", "", "", "")
	f.Add(uint8(0x01), "1e3", "", "", "", "")
	f.Add(uint8(0x0e), "", "C1", "a in (", "udp", "-1s")
	f.Add(uint8(0x18), "", "", "", "tcp", "0")
	f.Fuzz(func(t *testing.T, present uint8, ttl, names, selector, check, interval string) {
		annotations := map[string]string{}
		for i, kv := range [][2]string{
			{AnnotationTTL, ttl}, {AnnotationClusters, names}, {AnnotationClusterSelector, selector},
			{healthcheck.AnnotationCheck, check}, {healthcheck.AnnotationInterval, interval},
		} {
			if present&(1<<i) != 0 {
				annotations[kv[0]] = kv[1]
			}
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: annotations},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		cfg, err := parseConfig(svc)
		n, perr := strconv.ParseInt(strings.TrimSpace(ttl), 10, 64)
		ttlOK := present&1 == 0 || (perr == nil && n >= 1 && n <= maxTTL)
		switch {
		case present&1 == 0 && cfg.ttl != DefaultTTL:
			t.Fatalf("no TTL annotation, TTL %d", cfg.ttl)
		case present&1 != 0 && ttlOK && cfg.ttl != n:
			t.Fatalf("%s=%q read as %d", AnnotationTTL, ttl, cfg.ttl)
		case cfg.ttl < 1 || cfg.ttl > maxTTL:
			t.Fatalf("%s=%q gives TTL %d, out of bounds", AnnotationTTL, ttl, cfg.ttl)
		case !ttlOK && (err == nil || !strings.Contains(err.Error(), AnnotationTTL)):
			t.Fatalf("%s=%q accepted or not named: %v", AnnotationTTL, ttl, err)
		}
		for _, k := range []string{healthcheck.AnnotationCheck, healthcheck.AnnotationInterval} {
			want, has := annotations[k]
			got, carried := cfg.health[k]
			if has != carried || got != want {
				t.Fatalf("health annotation %s=%q carried as %q (%v)", k, want, got, carried)
			}
		}
		again, err2 := parseConfig(svc)
		if (err == nil) != (err2 == nil) || again.ttl != cfg.ttl || len(again.health) != len(cfg.health) {
			t.Fatalf("two reads differ: %+v %v, %+v %v", cfg, err, again, err2)
		}
		if err == nil {
			if _, herr := healthcheck.ParseAnnotations(cfg.health, healthcheck.Defaults()); herr != nil {
				t.Fatalf("accepted a health check that does not parse: %v", herr)
			}
		}
	})
}
