package services

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/failover"
)

// tell records the Events of one reconcile, once its writes are done: the
// shards adopted and created, and, once the records are published, the
// endpoints that left DNS or came back and a switch of the serving place.
func (c *Controller) tell(svc *corev1.Service, writes []copyWrite, st *status, published bool) {
	var created []string
	for _, w := range writes {
		name := w.action.read.member.Name
		for _, op := range w.ops {
			switch op {
			case "adopt":
				c.clusterEvent(svc, name, corev1.EventTypeNormal, "ShardAdopted", "adopted the matching Service already in cluster %s", name)
			case "create":
				created = append(created, name)
			}
		}
	}
	c.shardsCreated(svc, created)
	if published {
		c.verdictEvents(svc, st.verdicts)
		c.failoverEvents(svc, st)
		c.loadEvents(svc, st.load)
	}
}

// loadEvents tells when every endpoint that may answer reaches its target,
// and when one is under it again: while all are over, none is shed and
// answers follow capacity alone, which is the users' to fix (more
// replicas, more clusters).
func (c *Controller) loadEvents(svc *corev1.Service, l publish.Loads) {
	switch {
	case l.AllOver && !l.WasAllOver:
		c.event(svc, corev1.EventTypeWarning, ReasonAllOverTarget, "every endpoint that can answer is at or over its load target: answers follow capacity alone")
	case !l.AllOver && l.WasAllOver:
		c.event(svc, corev1.EventTypeNormal, ReasonUnderTarget, "an endpoint is under its load target again: answers follow the loads")
	}
}

// Reasons of the load Events.
const (
	ReasonAllOverTarget = "AllEndpointsOverTarget"
	ReasonUnderTarget   = "EndpointUnderTarget"
)

func (c *Controller) event(svc *corev1.Service, typ, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(svc, nil, typ, reason, "Reconcile", format, args...)
	}
}

// clusterEvent records an Event about svc in one member cluster, with that
// Cluster as its related object. The events library folds Events with the
// same regarding, related, reason and action into one series that keeps the
// first note only, and patches every series once more after six quiet
// minutes: without the Cluster, "created shard in cluster-2" and "-3" would
// be lost behind cluster-1's, and every Service would cost a write while
// nothing changes.
func (c *Controller) clusterEvent(svc *corev1.Service, cluster, typ, reason, format string, args ...any) {
	if c.Recorder != nil {
		related := &kfedv1alpha1.Cluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: kfedv1alpha1.GroupVersion.String(), Kind: "Cluster"},
			ObjectMeta: metav1.ObjectMeta{Name: cluster},
		}
		c.Recorder.Eventf(svc, related, typ, reason, "Reconcile", format, args...)
	}
}

// maxNote is how long an Event's note may be (events.k8s.io/v1).
const maxNote = 1024

// shardsCreated tells of the shards one reconcile created: one Event
// naming the cluster for a single shard (clusterEvent), and one Event
// naming them all for several. A Service placed in thirty members would
// otherwise cost thirty Events, most of the control plane's writes while
// a fleet's Services are created. A list too long for a note ends "and
// N more".
func (c *Controller) shardsCreated(svc *corev1.Service, created []string) {
	switch len(created) {
	case 0:
		return
	case 1:
		c.clusterEvent(svc, created[0], corev1.EventTypeNormal, "ShardCreated", "created shard in cluster %s", created[0])
		return
	}
	head := fmt.Sprintf("created shards in %d clusters: ", len(created))
	note := head + strings.Join(created, ", ")
	for n := len(created) - 1; len(note) > maxNote && n > 0; n-- {
		note = head + strings.Join(created[:n], ", ") + fmt.Sprintf(" and %d more", len(created)-n)
	}
	c.event(svc, corev1.EventTypeNormal, "ShardsCreated", "%s", note)
}

// verdictEvents tells users about endpoints that left DNS or came back.
func (c *Controller) verdictEvents(svc *corev1.Service, verdicts []endpointVerdict) {
	for _, v := range verdicts {
		switch {
		case v.was && !v.healthy:
			c.clusterEvent(svc, v.cluster, corev1.EventTypeWarning, "EndpointUnhealthy", "the endpoint in cluster %s is out of DNS: %s", v.cluster, v)
		case !v.was && v.healthy:
			c.clusterEvent(svc, v.cluster, corev1.EventTypeNormal, "EndpointHealthy", "the endpoint in cluster %s is back in DNS: %s", v.cluster, v)
		}
	}
}

// failoverEvents tells of a switch of the serving place, once it is
// published.
func (c *Controller) failoverEvents(svc *corev1.Service, st *status) {
	d := st.failoverDecision
	if d == nil || !d.Switched(st.failoverPrev) {
		return
	}
	typ := corev1.EventTypeNormal
	if d.State.Active == "" || d.Reason == failover.ReasonFailedOver || d.Reason == failover.ReasonPinnedPlaceDown {
		typ = corev1.EventTypeWarning
	}
	reason := d.Reason
	if reason == failover.ReasonPrimary {
		reason = "FailedBack"
	}
	c.event(svc, typ, reason, "%s no longer serves: %s", st.failoverPrev.Active, d.Message)
}

// events tells users about conditions that turned bad or good again.
func (c *Controller) events(before, after *corev1.Service) {
	for _, cond := range after.Status.Conditions {
		if !strings.HasPrefix(cond.Type, "kfed.io/") || cond.Type == kfedv1alpha1.ConditionHealthy {
			continue // verdictEvents tells of endpoints leaving and returning
		}
		was := meta.FindStatusCondition(before.Status.Conditions, cond.Type)
		if was != nil && was.Status == cond.Status && was.Reason == cond.Reason && was.Message == cond.Message {
			continue
		}
		if cond.Status == metav1.ConditionFalse && cond.Reason != reasonWaiting {
			c.event(after, corev1.EventTypeWarning, cond.Reason, "%s", cond.Message)
		}
	}
}
