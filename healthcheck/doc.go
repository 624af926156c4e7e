// Package healthcheck owns endpoint health checking: how an endpoint is
// probed, how one checker turns probes into a verdict, and how the verdicts
// of several checkers become the one the DNS records follow.
//
// The pieces, in the order an endpoint's health flows through them:
//
//   - Spec (annotations.go) is how an endpoint is probed: TCP connect, or an
//     HTTP(S) GET with a path and a passing status range; interval, timeout,
//     rise and fall. ParseAnnotations reads it from a Service's annotations
//     (the agent reads the copy on the DNSEndpoint).
//   - A prober (probe.go) probes one address once.
//   - Engine (engine.go: options, Set, Run, the verdicts read back) is a
//     checker: it probes a changing set of Targets (targets.go) forever,
//     each on its own jittered schedule (schedule.go, a timer heap), in
//     rounds that probe a target's addresses together (rounds.go), at most
//     MaxConcurrent at once, and keeps a local verdict per target with
//     HAProxy's rise and fall (risefall.go) and its latest round-trip times
//     (rtt.go). It also watches itself (degraded.go): a checker that sees
//     most endpoints of several clusters fail at once is more likely cut
//     off than they are down, and says it is degraded. Verdict flips and
//     Degraded changes reach the callbacks in order, on a goroutine of
//     their own (delivery.go). Each of those files owns one small piece and
//     knows nothing of the Engine; engine.go composes them.
//   - The agent reports each checker's verdicts and degraded flag with a
//     heartbeat; the controller turns every checker's report on an endpoint
//     into Ballots, and Verdict (quorum.go) decides: an endpoint is unhealthy
//     only when most fresh, non-degraded checkers see it down and they are
//     a quorum of the checkers configured.
//   - In a fleet of more checkers than an endpoint needs, Fleet (fleet.go)
//     gives each endpoint a panel of K of them, spread over regions: the
//     agent probes only the endpoints whose panel seats it, and the
//     controller counts only the panel's ballots (ADR 0012).
//
// The package imports nothing of kfed's but promreg; the agent, the API types and the
// controllers build on it.
package healthcheck
