package route53

import (
	"math"
	"strings"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// ELBZone holds the canonical hosted zone IDs of one region's load
// balancers: one for Classic and Application Load Balancers, one for
// Network Load Balancers.
type ELBZone struct {
	ELB, NLB string
}

// defaultELBZones is AWS's published table of load-balancer hosted zones
// ("Elastic Load Balancing endpoints and quotas") for the regions kfed is
// most often run in. Config.ELBZones adds others.
func defaultELBZones() map[string]ELBZone {
	return map[string]ELBZone{
		"us-east-1":      {ELB: "Z35SXDOTRQ7X7K", NLB: "Z26RNL4JYFTOTI"},
		"us-east-2":      {ELB: "Z3AADJGX6KTTL2", NLB: "ZLMOA37VPKANP"},
		"us-west-1":      {ELB: "Z368ELLRRE2KJ0", NLB: "Z24FKFUX50B4VW"},
		"us-west-2":      {ELB: "Z1H1FL5HABSF5", NLB: "Z18D5FSROUN65G"},
		"eu-west-1":      {ELB: "Z32O12XQLNTSW2", NLB: "Z2IFOLAFXWLO4F"},
		"eu-central-1":   {ELB: "Z215JYRZR1TBD5", NLB: "Z3F0SRJ5LGBH90"},
		"ap-southeast-1": {ELB: "Z1LMS91P8CMLE5", NLB: "ZKVM4W9LS7TM"},
		"ap-northeast-1": {ELB: "Z14GRHDCWA56QT", NLB: "Z31USIVHYNEOWT"},
	}
}

// elbZone returns the canonical hosted zone, in zones, of an AWS load
// balancer's hostname, and false if the name is not one of a known region:
//
//	name-123.us-east-1.elb.amazonaws.com            Classic or Application LB
//	dualstack.name-123.us-east-1.elb.amazonaws.com  the same, IPv4 and IPv6
//	name-123.elb.us-east-1.amazonaws.com            Network LB
func elbZone(zones map[string]ELBZone, host string) (string, bool) {
	labels := strings.Split(host, ".")
	n := len(labels)
	if n < 4 || labels[n-1] != "com" || labels[n-2] != "amazonaws" {
		return "", false
	}
	if labels[n-3] == "elb" {
		z, ok := zones[labels[n-4]]
		return z.ELB, ok && z.ELB != ""
	}
	if labels[n-4] == "elb" {
		z, ok := zones[labels[n-3]]
		return z.NLB, ok && z.NLB != ""
	}
	return "", false
}

// adjust makes desired record sets into what Route53 holds, with zones the
// load balancers' hosted zones: the provider's adjusting, whose rules its
// exported method states.
func adjust(zones map[string]ELBZone, desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	out := make([]dnsprovider.RecordSet, 0, len(desired))
	for _, d := range desired {
		n, err := dnsprovider.Normalize(d)
		if err != nil {
			out = append(out, d) // the planner reports it
			continue
		}
		if (n.Type == dnsprovider.TypeA || n.Type == dnsprovider.TypeAAAA) && n.Hostname != "" && n.Alias == nil {
			if zoneID, ok := elbZone(zones, n.Hostname); ok {
				n.Alias = &dnsprovider.Alias{Name: n.Hostname, ZoneID: zoneID, EvaluateTargetHealth: true}
				n = dnsprovider.MustNormalize(n)
			}
		}
		out = append(out, n)
	}
	out = dnsprovider.Proximity(out)
	type nt struct{ name, typ string }
	maxWeight := map[nt]int64{}
	for _, rs := range out {
		k := nt{rs.Name, rs.Type}
		maxWeight[k] = max(maxWeight[k], rs.Weight)
	}
	for i, rs := range out {
		if l := rs.Location; l != nil {
			out[i].Location = &dnsprovider.Location{Latitude: roundCoordinate(l.Latitude), Longitude: roundCoordinate(l.Longitude)}
			continue
		}
		switch m := maxWeight[nt{rs.Name, rs.Type}]; {
		case m > 255 && rs.Weight > 0:
			out[i].Weight = max(1, rs.Weight*255/m)
		case m == 0 && rs.SetIdentifier != "":
			// Every cluster weighs 0 (none has a ready replica): publish an
			// equal share, as Route53 reads all-zero weights anyway, rather
			// than zeros that a reader could take for "answer none".
			out[i].Weight = 1
		}
	}
	return out
}

// roundCoordinate rounds to Route53's two decimals, so that a location
// listed back equals the one desired.
func roundCoordinate(v float64) float64 { return math.Round(v*100) / 100 }
