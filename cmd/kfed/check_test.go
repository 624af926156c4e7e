package main

import (
	"bytes"
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
		got        checkResult
		status     string
		messageHas string
	}{
		{"controller renewed within its lease passes", evalController(leaseFacts{found: true, holder: "kfed-0", renewed: checkNow.Add(-5 * time.Second), duration: 15 * time.Second}, "kfed-system", checkNow), checkPass, "kfed-0 leads"},
		{"controller lease not renewed fails", evalController(leaseFacts{found: true, holder: "kfed-0", renewed: checkNow.Add(-time.Minute), duration: 15 * time.Second}, "kfed-system", checkNow), checkFail, "1m0s ago"},
		{"released controller lease fails", evalController(leaseFacts{found: true, renewed: checkNow, duration: 15 * time.Second}, "kfed-system", checkNow), checkFail, "no holder"},
		{"no controller lease fails", evalController(leaseFacts{}, "kfed-system", checkNow), checkFail, "never ran"},
		{"same versions pass", evalVersion(leaseFacts{found: true, version: "v1.2.0"}, "v1.2.0"), checkPass, "both v1.2.0"},
		{"version skew warns", evalVersion(leaseFacts{found: true, version: "v1.1.0"}, "v1.2.0"), checkWarn, "CLI v1.2.0, controller v1.1.0"},
		{"unstamped builds warn", evalVersion(leaseFacts{found: true, version: "unknown"}, "unknown"), checkWarn, "version is unknown"},
		{"controller without a version warns", evalVersion(leaseFacts{found: true}, "v1.2.0"), checkWarn, "does not say its version"},
		{"every CRD served passes", evalCRDs([]crdFacts{{kind: "Cluster"}, {kind: "DNSEndpoint"}}), checkPass, "Cluster, DNSEndpoint"},
		{"a missing CRD fails naming it", evalCRDs([]crdFacts{{kind: "Cluster"}, {kind: "DNSEndpoint", err: errors.New("CRD not installed")}}), checkFail, "DNSEndpoint (CRD not installed)"},
		{"member not Ready fails with its reason", evalMember(memberFacts{name: "c1", reason: "Unreachable", message: "dial tcp: refused"}, checkNow), checkFail, "Unreachable dial tcp"},
		{"member with a year of credentials passes", evalMember(memberFacts{name: "c1", ready: true, credKind: "token", expires: checkNow.AddDate(1, 0, 0)}, checkNow), checkPass, "token valid for 365d"},
		{"member credentials expiring in 10 days warn", evalMember(memberFacts{name: "c1", ready: true, credKind: "client certificate", expires: checkNow.AddDate(0, 0, 10)}, checkNow), checkWarn, "expires in 10d (2026-12-07)"},
		{"member credentials expired fail", evalMember(memberFacts{name: "c1", ready: true, credKind: "token", expires: checkNow.Add(-time.Hour)}, checkNow), checkFail, "expired 1h0m0s ago"},
		{"member credentials without expiry pass", evalMember(memberFacts{name: "c1", ready: true, credKind: "token"}, checkNow), checkPass, "no expiry known"},
		{"CoreDNS answering SOA and name passes", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", name: "demo.example.", answers: 3}, "example."), checkPass, "3 records"},
		{"CoreDNS not answering fails naming the cluster's address", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", soaErr: errors.New("i/o timeout")}, "example."), checkFail, "127.0.0.1:53 does not answer the SOA of example.: i/o timeout"},
		{"a cluster IP not answering from here only warns", evalDNS(dnsFacts{cluster: "c1", addr: "10.96.0.53:53", source: sourceClusterIP, soaErr: errors.New("i/o timeout")}, "example."), checkWarn, "does not answer from here"},
		{"a load balancer not answering fails", evalDNS(dnsFacts{cluster: "c1", addr: "192.0.2.1:53", source: "Service load balancer", soaErr: errors.New("i/o timeout")}, "example."), checkFail, "does not answer the SOA"},
		{"CoreDNS answering a name empty warns", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53", name: "demo.example."}, "example."), checkWarn, "no records"},
		{"CoreDNS without an address warns", evalDNS(dnsFacts{cluster: "c1", source: "no Service kfed-system/kfed-coredns: NotFound"}, "example."), checkWarn, "no CoreDNS address known"},
		{"no zone warns", evalDNS(dnsFacts{cluster: "c1", addr: "127.0.0.1:53"}, ""), checkWarn, "no zone"},
		{"cluster DNS forwarding the zone passes", evalForward(forwardFacts{cluster: "c1", found: true, corefile: ".:53 {\n forward . /etc/resolv.conf\n}\nexample.org:53 {\n forward . 10.0.0.10\n}\n"}, "example.org"), checkPass, "serves example.org"},
		{"cluster DNS forwarding a parent zone passes", evalForward(forwardFacts{cluster: "c1", found: true, corefile: "org:53 {\n forward . 10.0.0.10\n}\n"}, "example.org."), checkPass, "serves"},
		{"cluster DNS without the zone fails", evalForward(forwardFacts{cluster: "c1", found: true, corefile: ".:53 {\n kubernetes cluster.local\n}\n"}, "example.org"), checkFail, "no server block for example.org"},
		{"member without cluster CoreDNS warns", evalForward(forwardFacts{cluster: "c1"}, "example.org"), checkWarn, "no kube-system/coredns"},
		{"every checker fresh passes", evalQuorum([]checkerFacts{fresh("a"), fresh("b"), fresh("c")}), checkPass, "3 of 3 checkers vote (quorum 2)"},
		{"one checker stale of three warns naming it", evalQuorum([]checkerFacts{fresh("a"), fresh("b"), {name: "c", heartbeat: true, age: time.Minute, duration: 8 * time.Second}}), checkWarn, "stale: c"},
		{"two checkers stale of three lose quorum", evalQuorum([]checkerFacts{fresh("a"), {name: "b"}, {name: "c", heartbeat: true, age: time.Minute, duration: 8 * time.Second}}), checkFail, "quorum lost: 1 of 3 checkers vote, 2 needed; stale: b, c"},
		{"degraded checkers do not vote", evalQuorum([]checkerFacts{fresh("a"), {name: "b", heartbeat: true, duration: time.Minute, degraded: true}}), checkFail, "degraded: b"},
		{"no checkers warn", evalQuorum(nil), checkWarn, "every endpoint counts as healthy"},
		{"provider up to date passes", evalPublisher(publisherFacts{provider: "rfc2136", endpoints: 2}), checkPass, "2 DNSEndpoints published"},
		{"provider behind fails naming the endpoint", evalPublisher(publisherFacts{provider: "route53", endpoints: 2, behind: []string{"default/demo (generation 3)"}}), checkFail, "default/demo (generation 3)"},
		{"names held by another owner warn", evalPublisher(publisherFacts{provider: "route53", endpoints: 2, conflicts: []string{"a.example.", "b.example.", "c.example.", "d.example."}}), checkWarn, "a.example., b.example., c.example. and 1 more"},
		{"access allowed passes", evalAccess("rbac/crds", access{what: "create customresourcedefinitions", allowed: true}), checkPass, "you may create"},
		{"access denied fails", evalAccess("rbac/crds", access{what: "create customresourcedefinitions"}), checkFail, "you may not create customresourcedefinitions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got.Status != tc.status || !strings.Contains(tc.got.Message, tc.messageHas) {
				t.Errorf("got %s %q, want %s containing %q", tc.got.Status, tc.got.Message, tc.status, tc.messageHas)
			}
			if tc.got.Status != checkPass && tc.got.Hint == "" {
				t.Errorf("%s %q has no hint", tc.got.Status, tc.got.Message)
			}
		})
	}
}

func fresh(name string) checkerFacts {
	return checkerFacts{name: name, heartbeat: true, age: time.Second, duration: 8 * time.Second}
}

func TestDNSAddrs(t *testing.T) {
	got, err := dnsAddrs([]string{"cluster-2=127.0.0.1:5302", "east=10.0.0.1:53"},
		[]string{"KFED_DNS_CLUSTER_1=127.0.0.1:5301", "KFED_DNS_CLUSTER_2=127.0.0.1:9", "KFED_DNS_EDGE=127.0.0.1:5300", "HOME=/root"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cluster-1": "127.0.0.1:5301", "cluster-2": "127.0.0.1:5302", "east": "10.0.0.1:53"}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q (a flag wins over the environment)", k, got[k], v)
		}
	}
	if _, err := dnsAddrs([]string{"127.0.0.1:53"}, nil); err == nil {
		t.Error("--dns without CLUSTER= was accepted")
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

func jsonInt(i int64) string { b, _ := json.Marshal(i); return string(b) }

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

func TestPrintChecks(t *testing.T) {
	results := []checkResult{
		pass("api", "up"),
		fail("coredns/cluster-2", "start it", "127.0.0.1:5302 does not answer"),
	}
	var table bytes.Buffer
	if err := printChecks(&table, results, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CHECK", "coredns/cluster-2", "fail", "coredns/cluster-2: start it", "1 passed, 0 warnings, 1 failed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := printChecks(&js, results, "json"); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1]["name"] != "coredns/cluster-2" || got[1]["status"] != "fail" || got[1]["hint"] != "start it" || got[1]["message"] == "" {
		t.Errorf("json is %s, want a list of {name, status, message, hint}", js.String())
	}
}
