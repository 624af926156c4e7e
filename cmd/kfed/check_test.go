package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/ops/check"
)

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

func TestPrintChecks(t *testing.T) {
	results := []check.Result{
		{Name: "api", Status: check.Pass, Message: "up"},
		{Name: "coredns/cluster-2", Status: check.Fail, Message: "127.0.0.1:5302 does not answer", Hint: "start it"},
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
