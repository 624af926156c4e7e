package serviceconfig

import (
	"strconv"
	"strings"
	"testing"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// FuzzParse feeds arbitrary values of every annotation a federated Service
// is read with: kfed.io/ttl, the placement pair and a health check (present
// says which exist: bit 0 TTL, 1 clusters, 2 selector, 3 health check, 4
// health interval). Parse must not panic; an accepted TTL is the value given
// and within the bounds, an absent one the default; a TTL error names the
// annotation; the health annotations are carried exactly; and the same
// annotations read the same twice.
func FuzzParse(f *testing.F) {
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
			{kfedv1alpha1.AnnotationTTL, ttl}, {kfedv1alpha1.AnnotationClusters, names}, {kfedv1alpha1.AnnotationClusterSelector, selector},
			{kfedv1alpha1.AnnotationHealthCheck, check}, {kfedv1alpha1.AnnotationHealthInterval, interval},
		} {
			if present&(1<<i) != 0 {
				annotations[kv[0]] = kv[1]
			}
		}
		cfg, err := Parse(annotations)
		n, perr := strconv.ParseInt(strings.TrimSpace(ttl), 10, 64)
		ttlOK := present&1 == 0 || (perr == nil && n >= 1 && n <= MaxTTL)
		switch {
		case present&1 == 0 && cfg.TTL != DefaultTTL:
			t.Fatalf("no TTL annotation, TTL %d", cfg.TTL)
		case present&1 != 0 && ttlOK && cfg.TTL != n:
			t.Fatalf("%s=%q read as %d", kfedv1alpha1.AnnotationTTL, ttl, cfg.TTL)
		case cfg.TTL < 1 || cfg.TTL > MaxTTL:
			t.Fatalf("%s=%q gives TTL %d, out of bounds", kfedv1alpha1.AnnotationTTL, ttl, cfg.TTL)
		case !ttlOK && (err == nil || !strings.Contains(err.Error(), kfedv1alpha1.AnnotationTTL)):
			t.Fatalf("%s=%q accepted or not named: %v", kfedv1alpha1.AnnotationTTL, ttl, err)
		}
		for _, k := range []string{kfedv1alpha1.AnnotationHealthCheck, kfedv1alpha1.AnnotationHealthInterval} {
			want, has := annotations[k]
			got, carried := cfg.Health[k]
			if has != carried || got != want {
				t.Fatalf("health annotation %s=%q carried as %q (%v)", k, want, got, carried)
			}
		}
		again, err2 := Parse(annotations)
		if (err == nil) != (err2 == nil) || again.TTL != cfg.TTL || len(again.Health) != len(cfg.Health) {
			t.Fatalf("two reads differ: %+v %v, %+v %v", cfg, err, again, err2)
		}
		if err == nil {
			if _, herr := healthcheck.ParseAnnotations(cfg.Health, healthcheck.Defaults()); herr != nil {
				t.Fatalf("accepted a health check that does not parse: %v", herr)
			}
		}
	})
}
