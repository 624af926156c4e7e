package dns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// coreDNSIsAHiddenPrimaryForSecondaries
// (TestCoreDNSIsAHiddenPrimaryForSecondaries) runs the plugin as an operator
// runs a hidden primary: a CoreDNS with a transfer block that real BIND 9 and
// Knot DNS secondaries copy the zone from and get NOTIFY from, and beside it
// CoreDNS processes without one, started at other times over the same
// control plane.
func coreDNSIsAHiddenPrimaryForSecondaries(t *testing.T, f *framework.Federation) {
	const ns = "transfer"
	w := namesOfWeb(ns)
	ctx := context.Background()
	cp := f.Client("federation")
	fedtest.Create(t, cp, framework.Namespace(ns))
	// kfed's namespace, which an earlier test on the bed may have made.
	if err := cp.Create(ctx, framework.Namespace("kfed-system")); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	web := webDNSEndpoint(ns, "e2e", shard1, shard2)
	// The serial marker of the deletion step below goes too: the plugin of a
	// later test's CoreDNS would count it.
	marker := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-serial-e2e"}}
	fedtest.DeleteAtEnd(t, cp, web, marker)
	if err := cp.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	binary := fedtest.BuildCoreDNS(t)
	kubeconfig := fedtest.CoreDNSKubeconfig(t, f, "cluster-1")
	bindPort, knotPort := freeLoopbackPort(t), freeLoopbackPort(t)
	corefile := func(transfer bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s {\n\tbind 127.0.0.1\n\terrors\n", fedtest.DNSZone)
		if transfer {
			fmt.Fprintf(&b, "\ttransfer {\n\t\tto 127.0.0.1:%d 127.0.0.1:%d\n\t}\n", bindPort, knotPort)
		}
		fmt.Fprintf(&b, "\tkfed {\n\t\tfederation e2e\n\t\tkubeconfig %q federation\n\t\tns ns1.%s 127.0.0.1\n\t}\n}\n", kubeconfig, fedtest.DNSZone)
		return b.String()
	}
	start := func(name string, transfer bool) *devenv.CoreDNS {
		t.Helper()
		srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{Binary: binary, Name: name, Zone: fedtest.DNSZone, Corefile: corefile(transfer)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		return srv
	}
	primary := start("coredns-primary", true)
	secondaries := []*secondary{
		startBINDSecondary(t, bindPort, fedtest.DNSZone, primary.Addr),
		startKnotSecondary(t, knotPort, fedtest.DNSZone, primary.Addr),
	}
	// Started a while after the first, as a rolling update would.
	time.Sleep(1100 * time.Millisecond)
	replica := start("coredns-replica", false)

	// names compares what the secondary answers with what the plugin does.
	names := []string{w.global, w.region, w.zoneB, w.zoneC, w.europeB, "cluster-2." + w.global}
	sameAnswers := func() error {
		var errs []error
		for _, name := range names {
			want, err := answerSet(primary.Addr, name, dns.TypeA)
			if err != nil {
				return err
			}
			for _, sec := range secondaries {
				got, err := answerSet(sec.addr, name, dns.TypeA)
				if err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					errs = append(errs, fmt.Errorf("%s: %s answers %v, plugin %v", name, sec.name, got, want))
				}
			}
		}
		return errors.Join(errs...)
	}
	// sameSerials returns the serial that the plugin's replicas and the
	// secondaries all report, or an error listing them.
	sameSerials := func() (uint32, error) {
		servers := map[string]string{"primary": primary.Addr, "replica": replica.Addr}
		for _, sec := range secondaries {
			servers[sec.name] = sec.addr
		}
		got := map[string]uint32{}
		var serials []uint32
		for name, addr := range servers {
			r, err := fedtest.Query(addr, "udp", fedtest.DNSZone, dns.TypeSOA)
			if err != nil {
				return 0, err
			}
			got[name] = r.Answer[0].(*dns.SOA).Serial
			serials = append(serials, got[name])
		}
		if slices.Min(serials) != slices.Max(serials) {
			return 0, fmt.Errorf("serials differ: %v", got)
		}
		return serials[0], nil
	}

	t.Run("the secondaries load the zone and answer as the plugin does", func(t *testing.T) {
		framework.Eventually(t, 15*time.Second, func(context.Context) error { return sameAnswers() })
	})

	var serial uint32
	t.Run("replicas started at different times report the same serial as the secondaries", func(t *testing.T) {
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			var err error
			serial, err = sameSerials()
			return err
		})
	})

	t.Run("the transferred zone passes named-checkzone", func(t *testing.T) {
		zoneFile := filepath.Join(t.TempDir(), "zone.db")
		var out bytes.Buffer
		for rr := range axfr(t, primary.Addr, fedtest.DNSZone) {
			out.WriteString(rr.String() + "\n")
		}
		if err := os.WriteFile(zoneFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		check, err := exec.Command("named-checkzone", "-i", "local", "-k", "fail", "-n", "fail", "-m", "fail", "-M", "fail", "-S", "fail",
			strings.TrimSuffix(fedtest.DNSZone, "."), zoneFile).CombinedOutput()
		if err != nil {
			t.Errorf("named-checkzone: %v\n%s\n%s", err, check, out.String())
		}
	})

	t.Run("IXFR gets the SOA alone when current and the whole zone when behind", func(t *testing.T) {
		ixfr := func(from uint32) []dns.RR {
			m := new(dns.Msg)
			m.SetIxfr(fedtest.DNSZone, from, "ns1."+fedtest.DNSZone, "hostmaster."+fedtest.DNSZone)
			envelopes, err := new(dns.Transfer).In(m, primary.Addr)
			if err != nil {
				t.Fatal(err)
			}
			var rrs []dns.RR
			for e := range envelopes {
				if e.Error != nil {
					t.Fatal(e.Error)
				}
				rrs = append(rrs, e.RR...)
			}
			return rrs
		}
		if rrs := ixfr(serial); len(rrs) != 1 || rrs[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("IXFR from the current serial %d: %d records, want the SOA alone", serial, len(rrs))
		}
		full := 0
		for range axfr(t, primary.Addr, fedtest.DNSZone) {
			full++
		}
		if rrs := ixfr(serial - 1); len(rrs) != full {
			t.Errorf("IXFR from an older serial: %d records, want the whole zone's %d", len(rrs), full)
		}
	})

	t.Run("a change reaches the secondaries by NOTIFY and raises every serial alike", func(t *testing.T) {
		if err := cp.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			t.Fatal(err)
		}
		web.Spec = webDNSEndpoint(ns, "e2e", shard1).Spec
		changed := time.Now()
		if err := cp.Update(ctx, web); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			errs := []error{fedtest.WantRcode(primary.Addr, "cluster-2."+w.global, dns.RcodeNameError), sameAnswers()}
			for _, sec := range secondaries {
				errs = append(errs, fedtest.WantRcode(sec.addr, "cluster-2."+w.global, dns.RcodeNameError))
			}
			return errors.Join(errs...)
		})
		caughtUp := time.Since(changed)
		t.Logf("the secondaries answered the change %v after the update", caughtUp.Round(time.Millisecond))
		// A second is the goal; on a loaded machine the API server's
		// watch alone can take longer.
		if caughtUp > 3*time.Second {
			t.Errorf("the secondaries took %v to answer the change", caughtUp)
		}
		for _, sec := range secondaries {
			if !sec.notified() {
				t.Errorf("%s logged no NOTIFY from the plugin:\n%s", sec.name, sec.log())
			}
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			now, err := sameSerials()
			if err == nil && now <= serial {
				err = fmt.Errorf("serial %d did not rise from %d", now, serial)
			}
			if err == nil {
				serial = now
			}
			return err
		})
	})

	t.Run("a deletion and the writer's marker raise the serial in replicas started before and after", func(t *testing.T) {
		if err := cp.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
		// What kfed's services controller does after deleting a
		// DNSEndpoint (plugin README, "Serials").
		marker.Labels = map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": "e2e"}
		marker.Annotations = map[string]string{"kfed.io/last-deleted": string(web.UID)}
		if err := cp.Create(ctx, marker); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 5*time.Second, func(context.Context) error {
			now, err := sameSerials()
			if err == nil && now <= serial {
				err = fmt.Errorf("serial %d did not rise from %d", now, serial)
			}
			if err == nil {
				serial = now
			}
			errs := []error{err}
			for _, sec := range secondaries {
				errs = append(errs, fedtest.WantRcode(sec.addr, w.global, dns.RcodeNameError))
			}
			return errors.Join(errs...)
		})
		late := start("coredns-late", false)
		r, err := fedtest.Query(late.Addr, "udp", fedtest.DNSZone, dns.TypeSOA)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Answer[0].(*dns.SOA).Serial; got != serial {
			t.Errorf("a replica started after the deletion reports serial %d, the others %d", got, serial)
		}
	})

	t.Run("without a transfer block AXFR is refused at once", func(t *testing.T) {
		for _, proto := range []string{"tcp", "udp"} {
			c := &dns.Client{Net: proto, Timeout: 5 * time.Second}
			m := new(dns.Msg)
			m.SetQuestion(fedtest.DNSZone, dns.TypeAXFR)
			began := time.Now()
			r, _, err := c.Exchange(m, replica.Addr)
			if err != nil {
				t.Fatalf("AXFR over %s: %v", proto, err)
			}
			if r.Rcode != dns.RcodeRefused || time.Since(began) > time.Second {
				t.Errorf("AXFR over %s: %s after %v, want REFUSED at once", proto, dns.RcodeToString[r.Rcode], time.Since(began))
			}
		}
		host, port, _ := net.SplitHostPort(replica.Addr)
		began := time.Now()
		out, _ := exec.Command("dig", "@"+host, "-p", port, "+time=5", "+tries=1", fedtest.DNSZone, "AXFR").CombinedOutput()
		if !strings.Contains(string(out), "Transfer failed") || time.Since(began) > 2*time.Second {
			t.Errorf("dig AXFR after %v:\n%s", time.Since(began), out)
		}
	})
}

// answerSet is the sorted answer to name, as wantAddresses writes it.
func answerSet(addr, name string, qtype uint16) ([]string, error) {
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s from %s: %w", dns.TypeToString[qtype], name, addr, err)
	}
	got := append(fedtest.RRStrings(r.Answer), dns.RcodeToString[r.Rcode])
	slices.Sort(got)
	return got, nil
}

// axfr transfers zone from addr over TCP.
func axfr(t *testing.T, addr, zone string) func(func(dns.RR) bool) {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(zone)
	envelopes, err := new(dns.Transfer).In(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var rrs []dns.RR
	for e := range envelopes {
		if e.Error != nil {
			t.Fatal(e.Error)
		}
		rrs = append(rrs, e.RR...)
	}
	return slices.Values(rrs)
}

// secondary is a running secondary name server for one zone.
type secondary struct {
	name   string
	addr   string
	notify string // what its log says on a NOTIFY from the plugin
	out    process.Output
}

func (s *secondary) log() string { return s.out.String() }

func (s *secondary) notified() bool { return strings.Contains(s.log(), s.notify) }

// run starts the server's command line in dir and stops it when the test
// ends.
func (s *secondary) run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	p, err := process.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s log:\n%s", s.name, s.log())
		}
	})
}

// startBINDSecondary runs named on 127.0.0.1:port as a secondary of zone
// from primary, keeping the zone in memory only.
func startBINDSecondary(t *testing.T, port int, zone, primary string) *secondary {
	t.Helper()
	named, err := bindtest.Named()
	if err != nil {
		t.Fatal(err)
	}
	host, primaryPort, err := net.SplitHostPort(primary)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(`options {
	directory %[1]q;
	pid-file none;
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	session-keyfile none;
};
controls { };
zone %[3]q {
	type secondary;
	primaries { %[4]s port %[5]s; };
};
`, dir, port, strings.TrimSuffix(zone, "."), host, primaryPort)
	if err := os.WriteFile(filepath.Join(dir, "named.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &secondary{name: "BIND", addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), notify: "notify from " + host}
	s.run(t, dir, named, "-g", "-4", "-n", "1", "-c", filepath.Join(dir, "named.conf"))
	return s
}

// startKnotSecondary runs knotd (Debian's knot, hack/install-knot.sh) on
// 127.0.0.1:port as a secondary of zone from primary.
func startKnotSecondary(t *testing.T, port int, zone, primary string) *secondary {
	t.Helper()
	knotd, err := exec.LookPath("knotd")
	if err != nil {
		knotd = "/usr/sbin/knotd" // not on a non-root PATH
	}
	if _, err := os.Stat(knotd); err != nil {
		t.Fatal("knotd (Knot DNS) is not installed: run hack/install-knot.sh")
	}
	host, primaryPort, err := net.SplitHostPort(primary)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(`server:
    listen: 127.0.0.1@%[2]d
    rundir: %[1]q
    background-workers: 1
    udp-workers: 1
    tcp-workers: 1
log:
  - target: stderr
    any: info
database:
    storage: %[1]q
remote:
  - id: primary
    address: %[4]s@%[5]s
acl:
  - id: notify-from-primary
    address: %[4]s
    action: notify
template:
  - id: default
    storage: %[1]q
zone:
  - domain: %[3]s
    master: primary
    acl: notify-from-primary
`, dir, port, zone, host, primaryPort)
	if err := os.WriteFile(filepath.Join(dir, "knot.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &secondary{name: "Knot", addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), notify: "notify, incoming"}
	s.run(t, dir, knotd, "-c", filepath.Join(dir, "knot.conf"))
	return s
}

// freeLoopbackPort returns a port free for both UDP and TCP on 127.0.0.1.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}
