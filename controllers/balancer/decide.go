package balancer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/planner"
)

// failure is why a reconcile stopped before writing anything: the reason
// of the Balanced condition and a message for users.
type failure struct {
	Reason  string
	Message string
}

func (f *failure) Error() string { return f.Reason + ": " + f.Message }

func fail(reason, format string, args ...any) *failure {
	return &failure{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// target is one target as observed.
type target struct {
	Name string
	Ref  kfedv1alpha1.CrossVersionObjectReference
	// Spec and Status are the scale's spec.replicas and status.replicas,
	// Selector its status.selector.
	Spec, Status int32
	Selector     string
	Pods         podCounts
}

// podCounts are a target's pods that are not terminating or finished.
type podCounts struct {
	// Known is false where pods were not counted (no pods in the cluster, or
	// a target without a selector): Running is then the scale's status.
	Known                        bool
	Running, Pending, NotStarted int32
}

// validateSpec finds what is wrong with a Balancer's spec before any target
// is read: names the policy cannot resolve, limits that cannot be met, a
// selector that does not parse. The upstream controller crashes on some of
// these; here each is a reason and a message.
func validateSpec(spec *kfedv1alpha1.BalancerSpec) *failure {
	names := map[string]bool{}
	for i, t := range spec.Targets {
		if names[t.Name] {
			return fail(kfedv1alpha1.ReasonInvalidSpec, "targets[%d]: name %q is used twice", i, t.Name)
		}
		names[t.Name] = true
		if t.MinReplicas != nil && t.MaxReplicas != nil && *t.MinReplicas > *t.MaxReplicas {
			return fail(kfedv1alpha1.ReasonInvalidSpec, "target %q: minReplicas %d is more than maxReplicas %d",
				t.Name, *t.MinReplicas, *t.MaxReplicas)
		}
	}
	if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		return fail(kfedv1alpha1.ReasonInvalidSpec, "selector is empty: it must select the pods of every target")
	}
	if _, err := metav1.LabelSelectorAsSelector(&spec.Selector); err != nil {
		return fail(kfedv1alpha1.ReasonInvalidSpec, "selector: %v", err)
	}
	p := spec.Policy
	switch p.PolicyName {
	case kfedv1alpha1.PolicyPriority:
		if p.Priorities == nil || len(p.Priorities.TargetOrder) == 0 {
			return fail(kfedv1alpha1.ReasonInvalidPolicy, "policy priority needs priorities.targetOrder")
		}
		for i, n := range p.Priorities.TargetOrder {
			if !names[n] {
				return fail(kfedv1alpha1.ReasonInvalidPolicy, "priorities.targetOrder[%d] names %q, which is not a target", i, n)
			}
		}
	case kfedv1alpha1.PolicyProportional:
		if p.Proportions == nil || len(p.Proportions.TargetProportions) == 0 {
			return fail(kfedv1alpha1.ReasonInvalidPolicy, "policy proportional needs proportions.targetProportions")
		}
		for _, n := range slices.Sorted(maps.Keys(p.Proportions.TargetProportions)) {
			if !names[n] {
				return fail(kfedv1alpha1.ReasonInvalidPolicy, "proportions.targetProportions names %q, which is not a target", n)
			}
		}
	default:
		return fail(kfedv1alpha1.ReasonInvalidPolicy, "unknown policyName %q (want priority or proportional)", p.PolicyName)
	}
	if f := p.Fallback; f != nil && f.StartupTimeout.Duration <= 0 {
		return fail(kfedv1alpha1.ReasonInvalidPolicy, "fallback.startupTimeout must be positive, not %v", f.StartupTimeout.Duration)
	}
	// The planner checks the rest (duplicates in targetOrder, proportions
	// out of range); run it on empty counts so its refusal comes before any
	// target is read.
	if _, err := planner.PlanBalancer(plannerInput("", spec, nil)); err != nil {
		return fail(kfedv1alpha1.ReasonInvalidPolicy, "%v", err)
	}
	return nil
}

// plannerInput is the planner's view of spec with the observed targets'
// pods. Pods not started count only when the spec asks for fallback.
func plannerInput(key string, spec *kfedv1alpha1.BalancerSpec, observed []target) planner.BalancerInput {
	in := planner.BalancerInput{
		Key:         key,
		Total:       int64(spec.Replicas),
		Policy:      planner.Policy(spec.Policy.PolicyName),
		Preferences: map[string]planner.ClusterPreferences{},
	}
	for _, t := range spec.Targets {
		in.Targets = append(in.Targets, t.Name)
		var pref planner.ClusterPreferences
		if t.MinReplicas != nil {
			pref.MinReplicas = int64(*t.MinReplicas)
		}
		if t.MaxReplicas != nil {
			pref.MaxReplicas = new(int64(*t.MaxReplicas))
		}
		in.Preferences[t.Name] = pref
	}
	if p := spec.Policy.Priorities; p != nil {
		in.TargetOrder = p.TargetOrder
	}
	if p := spec.Policy.Proportions; p != nil {
		in.Proportions = make(map[string]int64, len(p.TargetProportions))
		for n, v := range p.TargetProportions {
			in.Proportions[n] = int64(v)
		}
	}
	in.Current = map[string]int64{}
	in.NotStarted = map[string]int64{}
	for _, t := range observed {
		if !t.Pods.Known {
			continue
		}
		in.Current[t.Name] = int64(t.Pods.Running + t.Pods.Pending)
		if spec.Policy.Fallback != nil {
			in.NotStarted[t.Name] = int64(t.Pods.NotStarted)
		}
	}
	return in
}

// decision is what a reconcile will do.
type decision struct {
	// Replicas per target name.
	Replicas map[string]int32
	// Overflow is fallback no target could take, by blocked target.
	Overflow map[string]int64
	// Blocked targets have pods pending past the startup timeout.
	Blocked []string
}

// decide plans the targets' replicas. spec must have passed validateSpec.
func decide(key string, spec *kfedv1alpha1.BalancerSpec, observed []target) (decision, *failure) {
	res, err := planner.PlanBalancer(plannerInput(key, spec, observed))
	if err != nil {
		return decision{}, fail(kfedv1alpha1.ReasonInvalidPolicy, "applying the policy: %v", err)
	}
	d := decision{Replicas: make(map[string]int32, len(res.Replicas)), Overflow: res.Overflow}
	for n, v := range res.Replicas {
		d.Replicas[n] = int32(v) // the planner keeps counts within int32
	}
	if spec.Policy.Fallback != nil {
		for _, t := range observed {
			if t.Pods.NotStarted > 0 {
				d.Blocked = append(d.Blocked, t.Name)
			}
		}
	}
	return d, nil
}

// countPods counts pods that are not terminating or finished, and returns
// how long until the next pending one passes timeout (0 if none will).
func countPods(pods []corev1.Pod, timeout time.Duration, now time.Time) (podCounts, time.Duration) {
	c := podCounts{Known: true}
	var due time.Duration
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			c.Running++
			continue
		}
		c.Pending++
		if timeout <= 0 {
			continue
		}
		if left := timeout - now.Sub(p.CreationTimestamp.Time); left <= 0 {
			c.NotStarted++
		} else if due == 0 || left < due {
			due = left
		}
	}
	return c, due
}

// describe says what d means for users, for the Fallback condition.
func (d decision) describe() string {
	if len(d.Blocked) == 0 {
		return ""
	}
	msg := fmt.Sprintf("pods of %s have not started within the startup timeout; their replicas are started elsewhere",
		strings.Join(d.Blocked, ", "))
	if len(d.Overflow) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(d.Overflow)) {
			parts = append(parts, fmt.Sprintf("%s %d", n, d.Overflow[n]))
		}
		msg += "; no target could take " + strings.Join(parts, ", ")
	}
	return msg
}
