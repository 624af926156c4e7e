package deploymentconfig

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/planner"
)

// FuzzParse feeds arbitrary values of every annotation a federated
// Deployment is read with: kfed.io/replica-preferences, kfed.io/adopt-existing,
// kfed.io/unschedulable-threshold and the placement pair (present says which
// exist, one bit each in that order). Nothing may panic; accepted
// preferences validate and survive a JSON round trip unchanged; adoption is
// on for "true" only; a threshold is accepted only when positive; and every
// error names the annotation at fault.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0x1f), `{"rebalance":true,"clusters":{"*":{"weight":1},"a":{"minReplicas":2,"maxReplicas":5,"weight":3}}}`, "true", "30s", "a,b", "tier=gold")
	f.Add(uint8(0x01), `{"clusters":{"a":{"minReplicas":3,"maxReplicas":1}}}`, "", "", "", "")
	f.Add(uint8(0x01), `{"clusters":{"":{"weight":1}}}`, "", "", "", "")
	f.Add(uint8(0x01), `{"clusters":{"a":{"maxReplica":1}}}`, "", "", "", "")
	f.Add(uint8(0x01), `{"clusters":{"a":{"weight":1e6}}} {}`, "", "", "", "")
	f.Add(uint8(0x01), `{"clusters":{"a":{"weight":-1}},"clusters":{}}`, "", "", "", "")
	f.Add(uint8(0x06), ``, "yes", "-5s", "", "")
	f.Add(uint8(0x04), ``, "", "1h2m3.5s", "", "")
	f.Fuzz(func(t *testing.T, present uint8, prefs, adopt, threshold, names, selector string) {
		annotations := map[string]string{}
		for i, kv := range [][2]string{
			{kfedv1alpha1.AnnotationReplicaPreferences, prefs}, {kfedv1alpha1.AnnotationAdoptExisting, adopt},
			{kfedv1alpha1.AnnotationUnschedulableThreshold, threshold},
			{kfedv1alpha1.AnnotationClusters, names}, {kfedv1alpha1.AnnotationClusterSelector, selector},
		} {
			if present&(1<<i) != 0 {
				annotations[kv[0]] = kv[1]
			}
		}
		cfg, err := Parse(annotations)
		if present&1 != 0 {
			p, perr := planner.ParsePreferences([]byte(prefs))
			switch {
			case perr != nil && (err == nil || !strings.Contains(err.Error(), kfedv1alpha1.AnnotationReplicaPreferences)):
				t.Fatalf("preferences %q refused (%v), but the config error %v does not say so", prefs, perr, err)
			case perr == nil && !reflect.DeepEqual(cfg.Preferences, p):
				t.Fatalf("preferences %q read as %+v, want %+v", prefs, cfg.Preferences, p)
			case perr == nil:
				if verr := p.Validate(); verr != nil {
					t.Fatalf("accepted preferences %q do not validate: %v", prefs, verr)
				}
				out, merr := json.Marshal(p)
				if merr != nil {
					t.Fatalf("accepted preferences do not encode: %v", merr)
				}
				back, berr := planner.ParsePreferences(out)
				if berr != nil || !reflect.DeepEqual(back, p) {
					t.Fatalf("preferences %q encode as %s, which reads back as %+v, %v", prefs, out, back, berr)
				}
			}
		} else if !reflect.DeepEqual(cfg.Preferences, EvenSpread()) {
			t.Fatalf("no preferences annotation, yet preferences %+v", cfg.Preferences)
		}
		if cfg.Adopt != (present&2 != 0 && adopt == "true") {
			t.Fatalf("%s=%q (present %v) read as adopt=%v", kfedv1alpha1.AnnotationAdoptExisting, adopt, present&2 != 0, cfg.Adopt)
		}
		if present&2 != 0 && adopt != "true" && adopt != "false" && (err == nil || !strings.Contains(err.Error(), kfedv1alpha1.AnnotationAdoptExisting)) {
			t.Fatalf("%s=%q accepted or not named: %v", kfedv1alpha1.AnnotationAdoptExisting, adopt, err)
		}

		got := cfg.UnschedulableThreshold
		want, terr := time.ParseDuration(threshold)
		switch {
		case present&4 == 0 && got != 0:
			t.Fatalf("no threshold annotation, threshold %v", got)
		case present&4 != 0 && (terr != nil || want <= 0) && (err == nil || !strings.Contains(err.Error(), kfedv1alpha1.AnnotationUnschedulableThreshold)):
			t.Fatalf("%s=%q accepted or not named: %v", kfedv1alpha1.AnnotationUnschedulableThreshold, threshold, err)
		case present&4 != 0 && terr == nil && want > 0 && got != want:
			t.Fatalf("%s=%q read as %v, want %v", kfedv1alpha1.AnnotationUnschedulableThreshold, threshold, got, want)
		case got < 0 || (got != 0 && present&4 == 0):
			t.Fatalf("%s=%q read as %v", kfedv1alpha1.AnnotationUnschedulableThreshold, threshold, got)
		}
	})
}
