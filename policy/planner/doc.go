// Package planner decides how many replicas of a federated object each
// cluster runs. It owns the replica preferences (the kfed.io/replica-preferences
// annotation), the placement rules of the Federated ReplicaSet design and of
// the Kubernetes autoscaler's Balancer, and the request and response of
// `kfed plan`. It is pure: no Kubernetes, no I/O beyond decoding a request,
// no state between calls. Controllers feed it live capacity and turn its
// output into replica counts and DNS weights.
//
// # Weighted plans (Plan)
//
// A cluster takes its own preferences entry, else the "*" entry, else gets no
// replicas. What it may hold is the lower of its maxReplicas and its capacity.
// Clusters are served in order of weight, heaviest first; equal weights are
// ordered by an FNV-1a hash of the object key and the cluster name, so one
// object always plans the same way and objects of one replica spread over
// the clusters instead of piling onto the alphabetically first.
//
// Minimums come first, in that order, as far as the total and the limits
// allow. The replicas left are shared by weight with water-filling: a cluster
// that reaches its limit hands the rest of its share to the others, by
// weight. Whole replicas are handed out by Balinski and Young's quota method,
// so every cluster below its limit is less than one replica from its exact
// share, and raising the total by one never takes a replica from any cluster
// (plain largest remainder can: the Alabama paradox). The original federation
// planner rounded each share up in turn, which gave the first clusters too
// many.
//
// Without rebalance, running replicas stay where they are up to the
// cluster's limit, and the rest raises the clusters furthest below the
// weighted layout first: each cluster ends at the larger of what it runs and
// its minimum plus a common weighted level. When fewer replicas are wanted
// than run, replicas go only from clusters above their weighted share (the
// rebalanced plan for the new total), the furthest above first, down to a
// common excess; of clusters equally far above, the last in order gives
// first. The original planner scaled 10+70 down to 50 as A=0 B=50; this one
// gives A=10 B=40.
//
// Where issue 3 is silent the package chooses:
//   - Overflow is only what no cluster can run. It goes to the clusters whose
//     capacity, not their maxReplicas, stopped them, planned over them as if
//     they had no capacity (minimums above capacity first, then by weight, up
//     to maxReplicas). Replicas that maxReplicas or weight 0 keep out are
//     not overflow. Plans with and without rebalance report it alike.
//   - Entries for clusters that are not listed (offline) are ignored.
//   - Clusters with identical weight, floor and limit are served as one
//     class whose replicas go to its members round-robin in order. Every
//     member stays within one replica of its share, plans stay house
//     monotone, and the work grows with the number of distinct claims rather
//     than of clusters.
//
// # Cost
//
// A plan sorts the clusters once, O(n log n). The quota method then replays
// seat by seat only from the last level where every exact share is a whole
// number, where its result is forced: at most Σw/g seats for the rising
// weights w with gcd g, each O(log n). With the usual small weights that is
// a handful of steps; weights near MaxWeight that share no factor make it up
// to a few million, a fraction of a second, which is why weights are capped.
//
// The replay is not skipped in general because no way to is known. The
// quota method is earliest-deadline-first scheduling of each share's k-th
// seat between its release (upper quota) and deadline (lower quota); its
// result at a level between two whole ones is the lower quotas plus a set of
// shares one seat ahead, and which set EDF reaches depends on every earlier
// seat. Deciding it directly means checking, for every earlier level, that
// the seats released since then fit in the seats handed out since then: the
// minimum of a sum of n sawtooth functions frac(x·w_i/W) over a range of x,
// a simultaneous Diophantine approximation problem. Picking the ahead set by
// a closed rule, such as earliest next deadline, breaks house monotonicity
// (TestQuotaMethodNeedsHistory shows one case).
//
// # Balancer plans (PlanBalancer)
//
// Targets have a minimum and maximum. Every target gets its minimum, even when
// the minimums exceed the total, and never more than its maximum. The
// priority policy fills targets in targetOrder; the proportional policy shares
// the total by proportions with minimums as floors, by the same quota method.
// Targets missing from targetOrder or proportions get their minimum only. A
// target with pods pending past the startup timeout is blocked: it keeps its
// replicas, and as many replicas as it will not start (its not-started pods,
// plus any new pods it is given, less pods a smaller plan removes, as in the
// autoscaler's Balancer) are placed elsewhere: on the targets after it in
// targetOrder, or by proportion on the targets that are not blocked. Fallback
// that no target can take is overflow on the blocked targets, the fallback
// added last first.
//
// # Limits
//
// Replica counts are at most MaxReplicas (a Deployment's int32) and weights
// and proportions at most MaxWeight. Within them every comparison is exact
// integer arithmetic, and invalid input is an error naming the field, never a
// panic.
package planner
