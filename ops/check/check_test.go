package check

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var checkNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func TestCheckJudgements(t *testing.T) {
	for _, tc := range []struct {
		name       string
		got        Result
		status     string
		messageHas string
	}{
		{"controller renewed within its lease passes", evalController(leaseFacts{found: true, holder: "kfed-0", renewed: checkNow.Add(-5 * time.Second), duration: 15 * time.Second}, "kfed-system", checkNow), Pass, "kfed-0 leads"},
		{"controller lease not renewed fails", evalController(leaseFacts{found: true, holder: "kfed-0", renewed: checkNow.Add(-time.Minute), duration: 15 * time.Second}, "kfed-system", checkNow), Fail, "1m0s ago"},
		{"released controller lease fails", evalController(leaseFacts{found: true, renewed: checkNow, duration: 15 * time.Second}, "kfed-system", checkNow), Fail, "no holder"},
		{"no controller lease fails", evalController(leaseFacts{}, "kfed-system", checkNow), Fail, "never ran"},
		{"same versions pass", evalVersion(leaseFacts{found: true, version: "v1.2.0"}, "v1.2.0"), Pass, "both v1.2.0"},
		{"version skew warns", evalVersion(leaseFacts{found: true, version: "v1.1.0"}, "v1.2.0"), Warn, "CLI v1.2.0, controller v1.1.0"},
		{"unstamped builds warn", evalVersion(leaseFacts{found: true, version: "unknown"}, "unknown"), Warn, "version is unknown"},
		{"controller without a version warns", evalVersion(leaseFacts{found: true}, "v1.2.0"), Warn, "does not say its version"},
		{"every CRD served passes", evalCRDs([]crdFacts{{kind: "Cluster"}, {kind: "DNSEndpoint"}}), Pass, "Cluster, DNSEndpoint"},
		{"a missing CRD fails naming it", evalCRDs([]crdFacts{{kind: "Cluster"}, {kind: "DNSEndpoint", err: errors.New("CRD not installed")}}), Fail, "DNSEndpoint (CRD not installed)"},
		{"member not Ready fails with its reason", evalMember(memberFacts{name: "c1", reason: "Unreachable", message: "dial tcp: refused"}, checkNow), Fail, "Unreachable dial tcp"},
		{"member with a year of credentials passes", evalMember(memberFacts{name: "c1", ready: true, credKind: "token", expires: checkNow.AddDate(1, 0, 0)}, checkNow), Pass, "token valid for 365d"},
		{"member credentials expiring in 10 days warn", evalMember(memberFacts{name: "c1", ready: true, credKind: "client certificate", expires: checkNow.AddDate(0, 0, 10)}, checkNow), Warn, "expires in 10d (2026-12-07)"},
		{"member credentials expired fail", evalMember(memberFacts{name: "c1", ready: true, credKind: "token", expires: checkNow.Add(-time.Hour)}, checkNow), Fail, "expired 1h0m0s ago"},
		{"member credentials without expiry pass", evalMember(memberFacts{name: "c1", ready: true, credKind: "token"}, checkNow), Pass, "no expiry known"},
		{"CoreDNS answering SOA and name passes", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", name: "demo.example.", answers: 3}, "example."), Pass, "3 records"},
		{"CoreDNS not answering fails naming the cluster's address", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", soaErr: errors.New("i/o timeout")}, "example."), Fail, "127.0.0.1:53 does not answer the SOA of example.: i/o timeout"},
		{"a cluster IP not answering from here only warns", evalDNS(dnsFacts{cluster: "c1", addr: "10.96.0.53:53", source: sourceClusterIP, soaErr: errors.New("i/o timeout")}, "example."), Warn, "does not answer from here"},
		{"a load balancer not answering fails", evalDNS(dnsFacts{cluster: "c1", addr: "192.0.2.1:53", source: "Service load balancer", soaErr: errors.New("i/o timeout")}, "example."), Fail, "does not answer the SOA"},
		{"CoreDNS answering a name empty warns", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", name: "demo.example."}, "example."), Warn, "no records"},
		{"CoreDNS without an address warns", evalDNS(dnsFacts{cluster: "c1", source: "no Service kfed-system/kfed-coredns: NotFound"}, "example."), Warn, "no CoreDNS address known"},
		{"no zone warns", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53"}, ""), Warn, "no zone"},
		{"cluster DNS forwarding the zone passes", evalForward(forwardFacts{cluster: "c1", found: true, corefile: ".:53 {\n forward . /etc/resolv.conf\n}\nexample.org:53 {\n forward . 10.0.0.10\n}\n"}, "example.org"), Pass, "serves example.org"},
		{"cluster DNS forwarding a parent zone passes", evalForward(forwardFacts{cluster: "c1", found: true, corefile: "org:53 {\n forward . 10.0.0.10\n}\n"}, "example.org."), Pass, "serves"},
		{"cluster DNS without the zone fails", evalForward(forwardFacts{cluster: "c1", found: true, corefile: ".:53 {\n kubernetes cluster.local\n}\n"}, "example.org"), Fail, "no server block for example.org"},
		{"member without cluster CoreDNS warns", evalForward(forwardFacts{cluster: "c1"}, "example.org"), Warn, "no kube-system/coredns"},
		{"every checker fresh passes", evalQuorum([]checkerFacts{fresh("a"), fresh("b"), fresh("c")}), Pass, "3 of 3 checkers vote (quorum 2)"},
		{"one checker stale of three warns naming it", evalQuorum([]checkerFacts{fresh("a"), fresh("b"), {name: "c", heartbeat: true, age: time.Minute, duration: 8 * time.Second}}), Warn, "stale: c"},
		{"two checkers stale of three lose quorum", evalQuorum([]checkerFacts{fresh("a"), {name: "b"}, {name: "c", heartbeat: true, age: time.Minute, duration: 8 * time.Second}}), Fail, "quorum lost: 1 of 3 checkers vote, 2 needed; stale: b, c"},
		{"degraded checkers do not vote", evalQuorum([]checkerFacts{fresh("a"), {name: "b", heartbeat: true, duration: time.Minute, degraded: true}}), Fail, "degraded: b"},
		{"no checkers warn", evalQuorum(nil), Warn, "every endpoint counts as healthy"},
		{"provider up to date passes", evalPublisher(publisherFacts{provider: "rfc2136", endpoints: 2}), Pass, "2 DNSEndpoints published"},
		{"provider behind fails naming the endpoint", evalPublisher(publisherFacts{provider: "route53", endpoints: 2, behind: []string{"default/demo (generation 3)"}}), Fail, "default/demo (generation 3)"},
		{"names held by another owner warn", evalPublisher(publisherFacts{provider: "route53", endpoints: 2, conflicts: []string{"a.example.", "b.example.", "c.example.", "d.example."}}), Warn, "a.example., b.example., c.example. and 1 more"},
		{"access allowed passes", evalAccess("rbac/crds", access{what: "create customresourcedefinitions", allowed: true}), Pass, "you may create"},
		{"access denied fails", evalAccess("rbac/crds", access{what: "create customresourcedefinitions"}), Fail, "you may not create customresourcedefinitions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got.Status != tc.status || !strings.Contains(tc.got.Message, tc.messageHas) {
				t.Errorf("got %s %q, want %s containing %q", tc.got.Status, tc.got.Message, tc.status, tc.messageHas)
			}
			if tc.got.Status != Pass && tc.got.Hint == "" {
				t.Errorf("%s %q has no hint", tc.got.Status, tc.got.Message)
			}
		})
	}
}

func TestCredentialExpiry(t *testing.T) {
	exp := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"system:serviceaccount:kfed:kfed","exp":` + jsonInt(exp.Unix()) + `}`))
	jwt := "eyJhbGciOiJSUzI1NiJ9." + claims + ".c2ln"
	legacy := "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`)) + ".c2ln"
	for _, tc := range []struct {
		name    string
		user    *clientcmdapi.AuthInfo
		kind    string
		expires time.Time
	}{
		{"a bound token expires at its exp", &clientcmdapi.AuthInfo{Token: jwt}, "token", exp},
		{"a token without exp never expires", &clientcmdapi.AuthInfo{Token: legacy}, "token", time.Time{}},
		{"an opaque token has no known expiry", &clientcmdapi.AuthInfo{Token: "abc"}, "token", time.Time{}},
		{"a client certificate expires at NotAfter", &clientcmdapi.AuthInfo{ClientCertificateData: certPEM(t, exp)}, "client certificate", exp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clientcmdapi.NewConfig()
			cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
			cfg.AuthInfos["u"] = tc.user
			cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
			cfg.CurrentContext = "m"
			data, err := clientcmd.Write(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			kind, expires, err := credentialExpiry(data)
			if err != nil || kind != tc.kind || !expires.Equal(tc.expires) {
				t.Errorf("got %q %v %v, want %q %v", kind, expires, err, tc.kind, tc.expires)
			}
		})
	}
}

func fresh(name string) checkerFacts {
	return checkerFacts{name: name, heartbeat: true, age: time.Second, duration: 8 * time.Second}
}

func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: notAfter.AddDate(-1, 0, 0), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func jsonInt(i int64) string { b, _ := json.Marshal(i); return string(b) }
