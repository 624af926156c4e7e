package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The names of kfed's contract with its users and outside tools, each
// declared here once (docs/design.md tells what each does): the
// annotations users write on control-plane objects, the marks kfed writes
// on the objects it makes, and the conditions and finalizers it sets.
// Every controller, the CLI, the plugin and the providers read them from
// here.

// Opting in, on a Service, Deployment, Gateway or Ingress.
const (
	// AnnotationFederated: "true" opts an object in: a Service of any
	// class, a Deployment with an even spread over its clusters, a Gateway
	// or an Ingress.
	AnnotationFederated = "kfed.io/federated"
	// LoadBalancerClassGlobal, as a Service's spec.loadBalancerClass, opts
	// it in; no cloud controller acts on it.
	LoadBalancerClassGlobal = "kfed.io/global"
)

// IsFederated reports whether obj opted in: a Service by its load
// balancer class LoadBalancerClassGlobal, a Deployment by replica
// preferences, and any object (a Gateway, an Ingress) by
// AnnotationFederated. Every controller and command asks here, so an
// object is federated to all of them or to none.
func IsFederated(obj metav1.Object) bool {
	annotations := obj.GetAnnotations()
	switch o := obj.(type) {
	case *corev1.Service:
		if c := o.Spec.LoadBalancerClass; c != nil && *c == LoadBalancerClassGlobal {
			return true
		}
	case *appsv1.Deployment:
		if _, ok := annotations[AnnotationReplicaPreferences]; ok {
			return true
		}
	}
	return annotations[AnnotationFederated] == "true"
}

// Records and routing, on a Service, Gateway, Ingress or ServiceExport
// (docs/design.md, "Routing").
const (
	// AnnotationTTL sets the record TTL in seconds.
	AnnotationTTL = "kfed.io/ttl"
	// AnnotationRouting chooses how clients are sent among the object's
	// clusters: weighted, proximity or failover.
	AnnotationRouting = "kfed.io/routing"
	// AnnotationFailoverOrder lists the places, in order, that serve the
	// object with routing failover: regions, zones or cluster names.
	AnnotationFailoverOrder = "kfed.io/failover-order"
	// AnnotationFailbackHold is how long a better place must be up before
	// traffic returns to it (a Go duration).
	AnnotationFailbackHold = "kfed.io/failback-hold"
	// AnnotationFailoverPin pins the serving place, a place of the order
	// (kfed failover SERVICE --to PLACE writes it; --auto removes it).
	AnnotationFailoverPin = "kfed.io/failover-pin"
	// AnnotationFailoverWithin bounds, for routing failover, the time from
	// the failure of the serving place's last endpoint until clients are
	// sent elsewhere: kfed derives the probe interval, timeout and fall and
	// the record TTL from it (a Go duration, such as "30s").
	AnnotationFailoverWithin = "kfed.io/failover-within"
)

// Placement, on any federated object: without these it is placed in every
// member.
const (
	// AnnotationClusters names the clusters (comma-separated).
	AnnotationClusters = "kfed.io/clusters"
	// AnnotationClusterSelector is a label selector on Cluster labels; each
	// cluster also has the implicit label kfed.io/region=<its region>.
	AnnotationClusterSelector = "kfed.io/cluster-selector"
	// AnnotationPlacementDecision names a PlacementDecision
	// (multicluster.x-k8s.io, KEP-5313) in the object's namespace: a fleet
	// scheduler decides the clusters, kfed carries the decision out. It
	// replaces AnnotationClusters; a selector still narrows it.
	AnnotationPlacementDecision = "kfed.io/placement-decision"
	// AnnotationPlacementDecided is kfed's own record, on the object, of
	// the clusters the named decision lists: "DECISION=c1,c2". kfed's
	// inventory controller keeps it as the decision changes, and writing it
	// is what makes every controller that places the object act on the
	// change.
	AnnotationPlacementDecided = "kfed.io/placement-decided"
)

// Replicas, on a Deployment.
const (
	// AnnotationReplicaPreferences opts a Deployment in, with the JSON of
	// the Federated ReplicaSet preferences.
	AnnotationReplicaPreferences = "kfed.io/replica-preferences"
	// AnnotationAdoptExisting: "true" lets kfed take over a member
	// Deployment of the same name that it did not create. Without it such
	// a Deployment is a conflict and is left alone.
	AnnotationAdoptExisting = "kfed.io/adopt-existing"
	// AnnotationUnschedulableThreshold overrides, for one Deployment, how
	// long a pod may stay unschedulable before its cluster counts as full,
	// as a Go duration ("30s").
	AnnotationUnschedulableThreshold = "kfed.io/unschedulable-threshold"
)

// Health checks, on a Service, Gateway, Ingress or ServiceExport: how each
// of its endpoints is probed. Any of them may be left out; the agent's
// defaults fill the rest.
const (
	// AnnotationHealthPrefix starts every one of them, so that they can be
	// carried as a set.
	AnnotationHealthPrefix = "kfed.io/health-"
	// AnnotationHealthCheck is the probe kind: tcp (default), http or https.
	AnnotationHealthCheck = "kfed.io/health-check"
	// AnnotationHealthPath is the path an http or https probe GETs
	// (default /).
	AnnotationHealthPath = "kfed.io/health-path"
	// AnnotationHealthPort is a port to probe instead of the endpoint's
	// first port.
	AnnotationHealthPort = "kfed.io/health-port"
	// AnnotationHealthHost is the host name an http or https probe asks
	// for: its Host header, and its TLS server name (SNI). Default: the
	// address. A Gateway answers per host, so its probes send one of its
	// hostnames.
	AnnotationHealthHost = "kfed.io/health-host"
	// AnnotationHealthStatus is the HTTP status range that passes:
	// "200-399" (default) or a single status such as "200".
	AnnotationHealthStatus = "kfed.io/health-status"
	// AnnotationHealthInterval is the time between probes of one endpoint,
	// a Go duration from 1s to 1h.
	AnnotationHealthInterval = "kfed.io/health-interval"
	// AnnotationHealthTimeout bounds one probe, a Go duration from 100ms to
	// less than the interval.
	AnnotationHealthTimeout = "kfed.io/health-timeout"
	// AnnotationHealthRise is how many consecutive passing probes turn an
	// unhealthy endpoint healthy again (1–10).
	AnnotationHealthRise = "kfed.io/health-rise"
	// AnnotationHealthFall is how many consecutive failing probes turn a
	// healthy endpoint unhealthy (1–10).
	AnnotationHealthFall = "kfed.io/health-fall"
	// AnnotationHealthLoadMetric names the figure of the ORCA load report
	// (the endpoint-load-metrics header on the answers to http and https
	// probes) that is the endpoint's load: application_utilization,
	// cpu_utilization, mem_utilization, rps_fractional, eps,
	// named_metrics.NAME or utilization.NAME. Without it:
	// application_utilization when above 0, else cpu_utilization.
	AnnotationHealthLoadMetric = "kfed.io/health-load-metric"
	// AnnotationHealthLoadTarget is the figure's value that is the
	// endpoint's target (its load 1.0), such as 0.8 or, for a rate, 1000;
	// default 1.
	AnnotationHealthLoadTarget = "kfed.io/health-load-target"
)

// The marks kfed writes on the objects it makes or takes over; users read
// them and never write them.
const (
	// AnnotationOrigin, on a member object, is the namespace/name of the
	// control-plane object it was made from.
	AnnotationOrigin = "kfed.io/origin"
	// AnnotationAdopted marks a member object that existed before kfed took
	// it over; kfed never deletes it, it lets go of it.
	AnnotationAdopted = "kfed.io/adopted"
	// AnnotationApplied, on a member object, is a hash of what kfed last
	// applied to it: member caches keep no managedFields, so it is how kfed
	// knows, without a request, that a copy already holds what it wants.
	AnnotationApplied = "kfed.io/applied"
	// AnnotationSpecHash, on a Deployment's copy, is a hash of everything
	// kfed sets on it but spec.replicas.
	AnnotationSpecHash = "kfed.io/spec-hash"
	// AnnotationHostnamesOf, on a DNSEndpoint that is not in its object's
	// namespace (a Gateway's or Ingress's, in kfed's: ADR 0008), names the
	// object it publishes, "Kind namespace/name".
	AnnotationHostnamesOf = "kfed.io/hostnames-of"
	// AnnotationConditions holds kfed's conditions on a federated Ingress,
	// as a JSON list of metav1.Condition: an Ingress's status has no
	// conditions.
	AnnotationConditions = "kfed.io/conditions"
	// AnnotationKubeconfigRenewed records on a Cluster when kfed join
	// --renew last replaced its kubeconfig: kfed-controller looks again
	// when its Cluster changes.
	AnnotationKubeconfigRenewed = "kfed.io/kubeconfig-renewed"
	// AnnotationControllerVersion, on the controller's leader-election
	// Lease, is the version of the replica that leads, which kfed check
	// compares with its own.
	AnnotationControllerVersion = "kfed.io/controller-version"
	// AnnotationClusterProfileAccess records on a Cluster made from a
	// ClusterProfile the hash of the profile's access provider, so that a
	// changed server or CA changes the Cluster and kfed reloads the member.
	AnnotationClusterProfileAccess = "kfed.io/cluster-profile-access"
	// LabelTokenFor marks the Secrets a member agent's tokens are bound to
	// (value: the agent).
	LabelTokenFor = "kfed.io/token-for"
)

// Finalizers: each holds its object until kfed has removed what it made of
// it.
const (
	// FinalizerService holds a federated Service until its shards and
	// records are gone.
	FinalizerService = "kfed.io/service-cleanup"
	// FinalizerDeployment holds a federated Deployment until its copies are
	// deleted (or, with orphan propagation, let go of).
	FinalizerDeployment = "kfed.io/deployment-cleanup"
	// FinalizerGateway holds a federated Gateway until its copies, its
	// routes' copies and its records are gone.
	FinalizerGateway = "kfed.io/gateway-cleanup"
	// FinalizerIngress holds a federated Ingress until its copies and
	// records are gone.
	FinalizerIngress = "kfed.io/ingress-cleanup"
	// FinalizerMember holds a Cluster until kfed has removed its objects
	// there.
	FinalizerMember = "kfed.io/member-cleanup"
	// FinalizerInventoryMember holds a ClusterProfile that kfed federates
	// to until kfed has taken its objects out of the cluster, which needs
	// the profile's access provider.
	FinalizerInventoryMember = "kfed.io/inventory-member"
)

// Condition types kfed sets on the objects it federates: a Service's,
// Gateway's or ServiceExport's status, an Ingress's AnnotationConditions.
const (
	// ConditionValid is False when the object's spec or kfed.io/*
	// annotations cannot be federated; kfed then changes nothing of it
	// until they are fixed.
	ConditionValid = "kfed.io/Valid"
	// ConditionPlaced is True when every placed, Ready cluster has its
	// shard or copy.
	ConditionPlaced = "kfed.io/Placed"
	// ConditionPublished is True when a Service's DNS records have at least
	// one endpoint.
	ConditionPublished = "kfed.io/Published"
	// ConditionHostnamesPublished is True when every hostname a Gateway or
	// Ingress serves is published, and False naming those that are not and
	// why.
	ConditionHostnamesPublished = "kfed.io/HostnamesPublished"
	// ConditionHealthy is True when every endpoint the health checkers
	// judge is healthy, and False, naming the ones that are out and why,
	// when not. Absent when no checker is configured.
	ConditionHealthy = "kfed.io/Healthy"
	// ConditionDNSPublished is True when every DNS provider kfed publishes
	// to holds the current records, and False when one leaves a name alone
	// because a record kfed does not own holds it, or failed to publish
	// them. Absent when no provider is set up. Each provider also has its
	// own condition (ConditionProgrammedPrefix + provider).
	ConditionDNSPublished = "kfed.io/DNSPublished"
	// ConditionProgrammedPrefix begins the condition every published
	// object carries per DNS provider that reports on its DNSEndpoint, such
	// as kfed.io/Programmed-route53.
	ConditionProgrammedPrefix = "kfed.io/Programmed-"
	// ConditionDNSProgrammed stands for the per-provider conditions on an
	// object that cannot hold many: a Gateway's status holds at most eight
	// conditions, two of them the Gateway API's own.
	ConditionDNSProgrammed = "kfed.io/DNSProgrammed"
	// ConditionFailover says, for routing failover, which place serves, why
	// and since when.
	ConditionFailover = "kfed.io/Failover"
	// ConditionDrained, while a cluster a published object is in is
	// drained: True once every drained cluster is out of its names, False
	// while it keeps some because no other cluster can answer. Absent when
	// none of its clusters is drained.
	ConditionDrained = "kfed.io/Drained"
	// ConditionGlobalName, on an export of a Service of type LoadBalancer,
	// says whether the federation's names of the Service are published from
	// it; kfed's own, beside the KEP's Valid, Ready and Conflict.
	ConditionGlobalName = "kfed.io/GlobalName"
	// ConditionNamesAdmitted, on a DNSEndpoint, says whether every name of
	// the object is its namespace's to publish; written only on those that
	// have had a refused endpoint.
	ConditionNamesAdmitted = "kfed.io/NamesAdmitted"
)

// Condition types kfed sets on a federated Deployment, beside the summed
// counts. A Deployment's conditions carry no observedGeneration of their
// own; status.observedGeneration says which generation they describe.
const (
	// DeploymentSynced is True when every placed, Ready member runs a copy
	// with its planned replicas.
	DeploymentSynced appsv1.DeploymentConditionType = "kfed.io/Synced"
	// DeploymentControlPlaneWorkloads is True when the control plane makes
	// ReplicaSets for the Deployment: it runs a Deployment controller,
	// which it must not.
	DeploymentControlPlaneWorkloads appsv1.DeploymentConditionType = "kfed.io/ControlPlaneWorkloads"
)
