package health

import "testing"

// TestHealthOnOneBed runs the package's tests one after another on one
// health bed (startHealthBed: three members, a checker in each at fastHC's
// settings, kfed-controller as a process publishing to BIND, CoreDNS), as
// subtests named for the tests they were (-run
// 'OnOneBed/TestHealthDetectionLatency$' runs one): starting a bed's four
// API servers, CRDs, joins and checkers costs more CPU than most of these
// tests. Each subtest starts from a bed as fresh as a new one (ready), and
// undoes what it changes before the next: Services of its own deleted
// (deleteAtEnd), killed checkers and the controller started again, network
// cuts removed, failure modes, routing and placement set back.
func TestHealthOnOneBed(t *testing.T) {
	hc := fastHC
	// The controller is a process of its own, which
	// TestHealthVerdictsSurviveAControllerKilledMidReport kills.
	hc.controllerBinary = true
	b := startHealthBed(t, hc)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *healthBed)
	}{
		// First: kfed-coredns has no Role yet (the proximity tests give it).
		{"TestCoreDNSWithoutRightsToHealthReportsStillServes", coreDNSWithoutRightsToHealthReportsStillServes},
		{"TestHealthChecksTakeADeadEndpointOutOfDNSByQuorum", healthChecksTakeADeadEndpointOutOfDNSByQuorum},
		{"TestHealthVerdictsSurviveAControllerKilledMidReport", healthVerdictsSurviveAControllerKilledMidReport},
		{"TestHealthDetectionLatency", healthDetectionLatency},
		{"TestFailoverServesOnePlaceAtATime", failoverServesOnePlaceAtATime},
		{"TestFailoverFollowsTheCheckersQuorum", failoverFollowsTheCheckersQuorum},
		{"TestFailoverAsAClientSeesIt", failoverAsAClientSeesIt},
		{"TestProximityOrdersAnswersByPlace", proximityOrdersAnswersByPlace},
		{"TestProximityOrdersATierByRoundTripTime", proximityOrdersATierByRoundTripTime},
		{"TestAnswersFollowTheLoadsEndpointsPublish", answersFollowTheLoadsEndpointsPublish},
		{"TestLoadClosedLoop", loadClosedLoop},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b.ready(t)
			tt.run(t, b)
		})
	}
}
