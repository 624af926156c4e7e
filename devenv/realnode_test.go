package devenv

import (
	"strings"
	"testing"
)

func TestRealNodesOfOneBedHaveTheirOwnNamesAndAddresses(t *testing.T) {
	seen := map[string]int{}
	for i := range 30 {
		n := newNodeNet("/tmp/bed", i)
		if len(n.HostVeth) > 15 {
			t.Errorf("member %d: veth name %q is longer than an interface name may be", i, n.HostVeth)
		}
		if !n.PodCIDR.Contains(n.Gateway) || n.PodCIDR.Contains(n.NodeIP) {
			t.Errorf("member %d: pods %s, gateway %s, node %s", i, n.PodCIDR, n.Gateway, n.NodeIP)
		}
		for _, s := range []string{n.Netns, n.HostVeth, n.HostIP.String(), n.NodeIP.String(), n.PodCIDR.String()} {
			if j, ok := seen[s]; ok {
				t.Errorf("members %d and %d share %s", j, i, s)
			}
			seen[s] = i
		}
	}
	if a, b := newNodeNet("/tmp/bed", 0), newNodeNet("/tmp/other", 0); a.Netns == b.Netns || a.HostVeth == b.HostVeth {
		t.Errorf("two beds name their first node's namespace and veth alike: %+v, %+v", a, b)
	}
}

func TestClusterDNSServesEveryZoneOnTheNodeAndForwardsNothing(t *testing.T) {
	n := newNodeNet("/tmp/bed", 1)
	got := clusterDNSCorefile(n, KfedZone{
		Zone: "kfed.test", Federation: "dev", Cluster: "cluster-2", Kubeconfig: "/k", Context: "federation",
		Clusterset: &ClustersetZone{Kubeconfig: "/k", Context: "cluster-2"},
	}, "/k", "cluster-2", "")
	for _, want := range []string{
		".:53 {", "kubernetes cluster.local in-addr.arpa ip6.arpa", `kubeconfig "/k" cluster-2`,
		"kfed.test {", "cluster cluster-2", "clusterset.local {",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Corefile lacks %q:\n%s", want, got)
		}
	}
	if c := strings.Count(got, "bind "+n.NodeIP.String()); c != 3 {
		t.Errorf("%d of 3 server blocks bind the node's address:\n%s", c, got)
	}
	if strings.Contains(got, "127.0.0.1") || strings.Contains(got, "forward") {
		t.Errorf("the cluster DNS listens on loopback or forwards:\n%s", got)
	}
}

// With the Helm chart's kfed CoreDNS in the member, the cluster DNS hands
// the federation's zone to its Service, as the chart's forward stanza does.
func TestClusterDNSForwardsTheZoneToTheChartsCoreDNS(t *testing.T) {
	n := newNodeNet("/tmp/bed", 0)
	got := clusterDNSCorefile(n, KfedZone{
		Zone: "kfed.test", Federation: "dev", Cluster: "cluster-1", Kubeconfig: "/k", Context: "federation",
		Clusterset: &ClustersetZone{Kubeconfig: "/k", Context: "cluster-1"},
	}, "/k", "cluster-1", "10.96.0.53:53")
	want := "kfed.test:53 {\n\tbind " + n.NodeIP.String() + "\n\terrors\n\tforward . 10.96.0.53:53\n}\n"
	if !strings.Contains(got, want) || !strings.Contains(got, "kubernetes cluster.local") {
		t.Errorf("Corefile does not serve cluster.local and forward the zone as\n%s\ngot:\n%s", want, got)
	}
	if strings.Contains(got, "kfed {") || strings.Contains(got, "clusterset") {
		t.Errorf("the cluster DNS serves the zone itself besides forwarding it:\n%s", got)
	}
}
