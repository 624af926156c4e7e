package services

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/policy/failover"
)

// Condition reasons.
const (
	reasonValid             = "Valid"
	reasonInvalidSpec       = "InvalidSpec"
	reasonNameTooLong       = "NameTooLong"
	reasonPlaced            = "Placed"
	reasonNoClusterReady    = "NoClusterReady"
	reasonUnknownClusters   = "UnknownClusters"
	reasonShardRejected     = "ShardRejected"
	reasonShardConflict     = "ShardConflict"
	reasonIngressUnresolved = "IngressUnresolved"
	reasonPublished         = "Published"
	reasonWaiting           = "WaitingForIngress"
	reasonDNSConflict       = "DNSConflict"
	reasonDNSPending        = "Publishing"
	reasonDNSPublished      = "ProvidersUpToDate"
	reasonHealthy           = "Healthy"
	reasonUnhealthy         = "EndpointsUnhealthy"
	reasonNoneHealthy       = "NoEndpointHealthy"
)

// status is what one reconcile's decision (and the DNS providers' reports)
// say of the Service; apply writes it as conditions. gen is the Service's
// generation, set by apply.
type status struct {
	gen int64

	invalidReason, invalidMsg string
	unknownClusters           string
	problems                  []problem
	waitingOn, notReady       []string

	reached   bool // the reconcile got as far as publishing
	global    string
	endpoints []string
	placed    int

	// what the DNS providers reported on the Service's DNSEndpoint
	publishers []extdnsv1alpha1.PublisherStatus
	generation int64

	// the health checkers' verdicts, one per endpoint; none when no
	// checker is configured
	verdicts []endpointVerdict

	// the failover decision, for a Service routed by failover, and the
	// state before it
	failoverDecision *failover.Decision
	failoverPrev     failover.State

	// drain is how the Service's drained clusters stand
	drain publish.Drain
	// load is what the endpoints' loads made of the weights
	load publish.Loads
}

// endpointVerdict is the checkers' verdict on one cluster's endpoint.
type endpointVerdict struct {
	cluster      string
	healthy, was bool
	tally        healthcheck.Tally
	reason       string // the first checker's reason for finding it down
}

func (v endpointVerdict) String() string {
	s := v.cluster + " (" + v.tally.String()
	if v.reason != "" && !v.healthy {
		s += ": " + v.reason
	}
	return s + ")"
}

type problem struct{ cluster, reason, msg string }

func (s *status) invalid(reason, msg string)  { s.invalidReason, s.invalidMsg = reason, msg }
func (s *status) placementWarning(msg string) { s.unknownClusters = msg }
func (s *status) copyProblem(cluster, reason, msg string) {
	s.problems = append(s.problems, problem{cluster, reason, msg})
}
func (s *status) waiting(cluster string)    { s.waitingOn = append(s.waitingOn, cluster) }
func (s *status) verdict(v endpointVerdict) { s.verdicts = append(s.verdicts, v) }
func (s *status) offline(cluster string)    { s.notReady = append(s.notReady, cluster) }
func (s *status) failover(d failover.Decision, prev failover.State) {
	s.failoverDecision, s.failoverPrev = &d, prev
}

// providers records the publish status the DNS sync wrote on the
// Service's DNSEndpoint of generation gen.
func (s *status) providers(pubs []extdnsv1alpha1.PublisherStatus, gen int64) {
	s.publishers, s.generation = pubs, gen
}

func (s *status) published(global string, shards []dnsendpoint.Cluster, placed int) {
	s.reached, s.global, s.placed = true, global, placed
	for _, sh := range shards {
		s.endpoints = append(s.endpoints, sh.Name)
	}
	slices.Sort(s.endpoints)
}

// apply writes the conditions and, once the Service has an endpoint, the
// global name as its load-balancer ingress.
func (s *status) apply(svc *corev1.Service) {
	s.gen = svc.Generation
	set := func(typ string, ok bool, reason, msg string) {
		st := metav1.ConditionTrue
		if !ok {
			st = metav1.ConditionFalse
		}
		meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{
			Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: s.gen,
		})
	}
	if s.invalidReason != "" {
		// Placed and Published keep saying what they said before.
		set(kfedv1alpha1.ConditionValid, false, s.invalidReason, s.invalidMsg)
		return
	}
	set(kfedv1alpha1.ConditionValid, true, reasonValid, "spec and annotations are valid")

	switch {
	case len(s.problems) > 0:
		var msgs []string
		for _, p := range s.problems {
			msgs = append(msgs, p.msg)
		}
		set(kfedv1alpha1.ConditionPlaced, false, s.problems[0].reason, strings.Join(msgs, "; "))
	case s.unknownClusters != "":
		set(kfedv1alpha1.ConditionPlaced, false, reasonUnknownClusters, s.unknownClusters)
	case s.placed == 0:
		set(kfedv1alpha1.ConditionPlaced, false, reasonNoClusterReady, "the placement selects no joined cluster")
	case s.placed == len(s.notReady):
		set(kfedv1alpha1.ConditionPlaced, false, reasonNoClusterReady, "no placed cluster is Ready: "+strings.Join(s.notReady, ", "))
	default:
		msg := fmt.Sprintf("shards in %d of %d placed clusters", s.placed-len(s.notReady), s.placed)
		if len(s.notReady) > 0 {
			msg += "; not Ready: " + strings.Join(s.notReady, ", ")
		}
		set(kfedv1alpha1.ConditionPlaced, true, reasonPlaced, msg)
	}

	if !s.reached {
		return
	}
	if len(s.endpoints) == 0 {
		msg := "no shard has a load-balancer address yet"
		if len(s.waitingOn) > 0 {
			msg += " (waiting on " + strings.Join(s.waitingOn, ", ") + ")"
		}
		set(kfedv1alpha1.ConditionPublished, false, reasonWaiting, msg)
		return
	}
	msg := fmt.Sprintf("%s has endpoints in %s", s.global, strings.Join(s.endpoints, ", "))
	if len(s.waitingOn) > 0 {
		msg += "; waiting for ingress in " + strings.Join(s.waitingOn, ", ")
	}
	set(kfedv1alpha1.ConditionPublished, true, reasonPublished, msg)
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: s.global}}
	}
	if len(s.verdicts) == 0 {
		// No checker is configured (any more): nothing judges health.
		meta.RemoveStatusCondition(&svc.Status.Conditions, kfedv1alpha1.ConditionHealthy)
	}
	s.applyHealth(set)
	s.applyDNS(set)
	publish.SetProgrammedConditions(&svc.Status.Conditions, s.publishers, s.generation, s.gen)
	s.applyFailover(svc)
	s.drain.SetCondition(&svc.Status.Conditions, s.gen)
}

// applyFailover turns the failover decision into kfedv1alpha1.ConditionFailover, which is
// True while a place of the order serves and False when none is up (every
// cluster serves); a Service not routed by failover has none.
func (s *status) applyFailover(svc *corev1.Service) {
	d := s.failoverDecision
	if d == nil {
		meta.RemoveStatusCondition(&svc.Status.Conditions, kfedv1alpha1.ConditionFailover)
		return
	}
	cond := metav1.Condition{Type: kfedv1alpha1.ConditionFailover, Status: metav1.ConditionTrue, Reason: d.Reason, ObservedGeneration: s.gen, Message: d.Message}
	if d.State.Active == "" {
		cond.Status = metav1.ConditionFalse
	} else {
		cond.Message += " (since " + d.State.Since.UTC().Format(time.RFC3339) + ")"
	}
	meta.SetStatusCondition(&svc.Status.Conditions, cond)
}

// applyHealth turns the checkers' verdicts into kfedv1alpha1.ConditionHealthy.
func (s *status) applyHealth(set func(typ string, ok bool, reason, msg string)) {
	if len(s.verdicts) == 0 {
		return
	}
	var out []string
	for _, v := range s.verdicts {
		if !v.healthy {
			out = append(out, v.String())
		}
	}
	n := len(s.verdicts)
	switch {
	case len(out) == 0:
		set(kfedv1alpha1.ConditionHealthy, true, reasonHealthy, fmt.Sprintf("%d of %d endpoints healthy", n, n))
	case len(out) == n:
		set(kfedv1alpha1.ConditionHealthy, false, reasonNoneHealthy, fmt.Sprintf("no endpoint is healthy, so %s keeps all of them (fail open): %s",
			s.global, strings.Join(out, "; ")))
	default:
		set(kfedv1alpha1.ConditionHealthy, false, reasonUnhealthy, fmt.Sprintf("%d of %d endpoints healthy; out of DNS: %s",
			n-len(out), n, strings.Join(out, "; ")))
	}
}

// applyDNS turns the providers' reports into kfedv1alpha1.ConditionDNSPublished.
func (s *status) applyDNS(set func(typ string, ok bool, reason, msg string)) {
	if len(s.publishers) == 0 {
		return
	}
	var conflicts, failed, pending, done []string
	for _, p := range s.publishers {
		switch {
		case len(p.Conflicts) > 0:
			conflicts = append(conflicts, fmt.Sprintf("%s leaves %s alone: held by records kfed does not own", p.Provider, strings.Join(p.Conflicts, ", ")))
		case p.ObservedGeneration < s.generation && p.Error != "":
			failed = append(failed, p.Provider+": "+p.Error)
		case p.ObservedGeneration < s.generation:
			pending = append(pending, p.Provider)
		default:
			done = append(done, p.Provider)
		}
	}
	switch {
	case len(conflicts) > 0:
		set(kfedv1alpha1.ConditionDNSPublished, false, reasonDNSConflict, strings.Join(conflicts, "; "))
	case len(failed) > 0:
		set(kfedv1alpha1.ConditionDNSPublished, false, publish.ReasonProviderError, "not published: "+strings.Join(failed, "; "))
	case len(pending) > 0:
		set(kfedv1alpha1.ConditionDNSPublished, false, reasonDNSPending, "not yet published to "+strings.Join(pending, ", "))
	default:
		set(kfedv1alpha1.ConditionDNSPublished, true, reasonDNSPublished, "published to "+strings.Join(done, ", "))
	}
}
