// Package check tests `kfed check` against a `kfed dev up` bed
// (devenv.StartDev): it passes there, and fails naming the fault when a
// member's CoreDNS stops and when the checkers lose their quorum.
//
// Like every package under test/e2e, it runs against real kube-apiserver and
// etcd processes on loopback, real CoreDNS with kfed's plugin and real
// kfed-healthcheck agents; test/fedtest holds what the packages share.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

type result struct {
	Name, Status, Message, Hint string
}

// checkJudgesTheDevBed: `kfed check` passes on the healthy bed, then fails
// naming cluster-2's CoreDNS once it stops, and the checkers once two of
// three stop. It stops them: it runs last on the bed.
func checkJudgesTheDevBed(t *testing.T, d *devenv.Dev, bin string) {
	var err error
	var env []string
	for k, v := range fedtest.ReadEnvFile(t, filepath.Join(d.Dir, "env")) {
		env = append(env, k+"="+v)
	}
	check := func() (map[string]result, error) {
		// As a user who sourced DIR/env: the kubeconfig, zone, federation
		// and the members' CoreDNS addresses come from it.
		cmd := exec.Command(filepath.Join(bin, "kfed"), "check", "-o", "json")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		var results []result
		if jerr := json.Unmarshal(out, &results); jerr != nil {
			t.Fatalf("kfed check -o json printed %q (%v): %v", out, err, jerr)
		}
		byName := map[string]result{}
		for _, r := range results {
			byName[r.Name] = r
		}
		return byName, err
	}
	failed := func(rs map[string]result) []string {
		var out []string
		for _, r := range rs {
			if r.Status == "fail" {
				out = append(out, r.Name)
			}
		}
		slices.Sort(out)
		return out
	}

	// A healthy bed: no check fails, and the ones that matter pass.
	var rs map[string]result
	// The checkers' first heartbeats may still be settling.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		rs, err = check()
		if err != nil {
			return errors.New("kfed check failed: " + strings.Join(failed(rs), ", "))
		}
		return nil
	})
	for _, name := range []string{"api", "crds", "controller", "cluster/cluster-1", "cluster/cluster-3",
		"coredns/cluster-1", "coredns/cluster-2", "coredns/cluster-3", "checkers"} {
		if rs[name].Status != "pass" {
			t.Errorf("on a healthy bed %s is %+v, want pass", name, rs[name])
		}
	}
	if !strings.Contains(rs["coredns/cluster-1"].Message, " and demo.default.dev.svc.kfed.test (3 records)") {
		t.Errorf("coredns/cluster-1 says %q, want it to have asked for a published name", rs["coredns/cluster-1"].Message)
	}
	// The table a user reads says the same.
	table := exec.Command(filepath.Join(bin, "kfed"), "check")
	table.Env = append(os.Environ(), env...)
	out, err := table.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ", 0 failed") {
		t.Errorf("kfed check: %v\n%s", err, out)
	}
	t.Logf("kfed check on the bed:\n%s", out)
	// The bed's admin may install: --pre passes and checks the rights.
	pre := exec.Command(filepath.Join(bin, "kfed"), "check", "--pre")
	pre.Env = append(os.Environ(), env...)
	if out, err := pre.CombinedOutput(); err != nil || !strings.Contains(string(out), "you may create customresourcedefinitions") ||
		!strings.Contains(string(out), "kfed-system exists") {
		t.Errorf("kfed check --pre: %v\n%s", err, out)
	}
	if v := rs["version"]; strings.Contains(v.Message, "does not say its version") {
		t.Errorf("version is %+v, want the controller's version read from its Lease", v)
	}

	// cluster-2's CoreDNS stops: check fails, naming it and its address.
	d.CoreDNS[1].Stop()
	rs, err = check()
	if err == nil {
		t.Fatal("kfed check exited 0 with cluster-2's CoreDNS stopped")
	}
	if got := failed(rs); !slices.Equal(got, []string{"coredns/cluster-2"}) {
		t.Errorf("failed checks %v, want [coredns/cluster-2]", got)
	}
	if m := rs["coredns/cluster-2"].Message; !strings.Contains(m, d.DNS[1]) {
		t.Errorf("coredns/cluster-2 says %q, want its address %s", m, d.DNS[1])
	}

	// Two of the three checkers stop: once their heartbeats go stale (8 s
	// on the bed), the quorum is lost and check says so.
	d.Checkers[0].Stop()
	d.Checkers[1].Stop()
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		rs, _ = check()
		if got := failed(rs); !slices.Equal(got, []string{"checkers", "coredns/cluster-2"}) {
			return errors.New("failed checks " + strings.Join(got, ", ") + ", want checkers and coredns/cluster-2")
		}
		return nil
	})
	if m := rs["checkers"].Message; !strings.Contains(m, "quorum lost: 1 of 3") || !strings.Contains(m, "healthcheck-cluster-1") {
		t.Errorf("checkers says %q, want the quorum lost and the stale checkers named", m)
	}
}
