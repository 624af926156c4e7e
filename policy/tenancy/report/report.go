// Package tenancy tells users and operators which endpoints of the
// federation's DNSEndpoints their namespace may not publish: a status
// condition on the object, a Warning Event naming each refused name and the
// rule, and the metric kfed_dnsendpoint_refused_endpoints. The rule itself
// is tenancy.Endpoints, which every reader of DNSEndpoints applies; this
// package only reports what they leave out.
package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/internal/promreg"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reasons of kfedv1alpha1.ConditionNamesAdmitted and of the Warning Event.
const (
	ReasonNameNotOwned = "NameNotOwned"
	reasonAdmitted     = "Admitted"
)

// Reporter reconciles the federation's DNSEndpoints: it writes the
// condition and Events for the endpoints Rule refuses.
type Reporter struct {
	Client     client.Client
	Recorder   events.EventRecorder
	Federation string
	Rule       tenancy.Endpoints
}

// SetupWithManager registers the reporter, and its metric with reg.
func (r *Reporter) SetupWithManager(mgr ctrl.Manager, reg prometheus.Registerer) error {
	if _, err := promreg.Register(reg, prometheus.Collector(&collector{fed: mgr.GetClient(), federation: r.Federation, rule: r.Rule})); err != nil {
		return fmt.Errorf("registering tenancy metrics: %w", err)
	}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		for k, v := range dnsendpoint.Selector(r.Federation) {
			if o.GetLabels()[k] != v {
				return false
			}
		}
		return true
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnsendpoint-tenancy").
		For(&extdnsv1alpha1.DNSEndpoint{}, builder.WithPredicates(ours, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, conditionLost()))).
		Complete(r)
}

// conditionLost passes an update that dropped kfedv1alpha1.ConditionNamesAdmitted: ExternalDNS
// (v0.22) marks a generation observed by updating the whole status from its
// own type, which has no conditions, and the refusal must not vanish until
// the next change of the object.
func conditionLost() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			had, has := admittedCondition(e.ObjectOld), admittedCondition(e.ObjectNew)
			return had && !has
		},
	}
}

func admittedCondition(o client.Object) bool {
	ep, ok := o.(*extdnsv1alpha1.DNSEndpoint)
	return ok && meta.FindStatusCondition(ep.Status.Conditions, kfedv1alpha1.ConditionNamesAdmitted) != nil
}

// Reconcile reports what the rule refuses of one DNSEndpoint.
func (r *Reporter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := r.Client.Get(ctx, req.NamespacedName, &ep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	_, refused := r.Rule.Admit(&ep)
	want, ok := Condition(&ep, refused)
	if !ok {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(ep.DeepCopy())
	if !meta.SetStatusCondition(&ep.Status.Conditions, want) {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Status().Patch(ctx, &ep, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording refused names of DNSEndpoint %s: %w", req.NamespacedName, err)
	}
	if r.Recorder != nil && want.Status == metav1.ConditionFalse {
		// One Event for all: the recorder folds Events of one object and
		// reason into a series that keeps only the first note.
		r.Recorder.Eventf(&ep, nil, corev1.EventTypeWarning, ReasonNameNotOwned, "Publish", "%s", eventNote(refused))
	}
	return ctrl.Result{}, nil
}

// Condition is the kfedv1alpha1.ConditionNamesAdmitted that ep, of whose endpoints refused
// are refused, should have; ok is false when it should have none (nothing
// refused, and no condition to turn True).
func Condition(ep *extdnsv1alpha1.DNSEndpoint, refused []tenancy.Refusal) (metav1.Condition, bool) {
	if len(refused) == 0 {
		if meta.FindStatusCondition(ep.Status.Conditions, kfedv1alpha1.ConditionNamesAdmitted) == nil {
			return metav1.Condition{}, false
		}
		return metav1.Condition{
			Type: kfedv1alpha1.ConditionNamesAdmitted, Status: metav1.ConditionTrue, Reason: reasonAdmitted, ObservedGeneration: ep.Generation,
			Message: "every name is the namespace's to publish",
		}, true
	}
	names := make([]string, len(refused))
	for i, rf := range refused {
		names[i] = rf.RecordType + " " + rf.Name
	}
	return metav1.Condition{
		Type: kfedv1alpha1.ConditionNamesAdmitted, Status: metav1.ConditionFalse, Reason: ReasonNameNotOwned, ObservedGeneration: ep.Generation,
		Message: fmt.Sprintf("%d of %d endpoints are not published, since namespace %s may not publish their names: %s (%s)",
			len(refused), len(ep.Spec.Endpoints), ep.Namespace, strings.Join(names, ", "), refused[0].Reason),
	}, true
}

// maxNote is what an Event's note may hold (events.k8s.io/v1: 1 kB).
const maxNote = 1024

// eventNote names each refused endpoint and why, within maxNote.
func eventNote(refused []tenancy.Refusal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d endpoints not published:", len(refused))
	for i, rf := range refused {
		line := fmt.Sprintf(" %s;", rf)
		// Room is kept for the "and N more" that ends a long list.
		if b.Len()+len(line) > maxNote-80 {
			fmt.Fprintf(&b, " and %d more (see the condition %s)", len(refused)-i, kfedv1alpha1.ConditionNamesAdmitted)
			break
		}
		b.WriteString(line)
	}
	return strings.TrimSuffix(b.String(), ";")
}

var refusedDesc = prometheus.NewDesc("kfed_dnsendpoint_refused_endpoints",
	"Endpoints of the federation's DNSEndpoints that no reader publishes, because their namespace may not publish their names, by namespace.",
	[]string{"namespace"}, nil)

// collector counts refused endpoints from the cache at each scrape, so that
// the count needs no state of its own.
type collector struct {
	fed        client.Reader
	federation string
	rule       tenancy.Endpoints
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var list extdnsv1alpha1.DNSEndpointList // the cache's own: read only
	if err := c.fed.List(context.Background(), &list, client.MatchingLabels(dnsendpoint.Selector(c.federation)), client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	counts := map[string]int{}
	for i := range list.Items {
		if _, refused := c.rule.Admit(&list.Items[i]); len(refused) > 0 {
			counts[list.Items[i].Namespace] += len(refused)
		}
	}
	for ns, n := range counts {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.GaugeValue, float64(n), ns)
	}
}
