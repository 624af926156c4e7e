package healthcheck

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkProbe measures one probe against a loopback server, back to back:
// the cost of a probe itself, server side included (same process).
func BenchmarkProbe(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	web := Defaults()
	web.Kind, web.Path, web.StatusMin, web.StatusMax = KindHTTP, "/healthz", 200, 399
	for _, bc := range []struct {
		name string
		addr string
		spec Spec
	}{{"tcp", ln.Addr().String(), Defaults()}, {"http", srv.Listener.Addr().String(), web}} {
		addr := netip.MustParseAddrPort(bc.addr)
		p := newProber(netip.Addr{})
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := p.probe(context.Background(), addr, bc.spec); !r.OK {
					b.Fatal(r.Reason)
				}
			}
		})
	}
}

// BenchmarkEngine runs one engine with N TCP targets on a 1 s interval (the
// shortest a Spec allows) against 16 loopback listeners, for b.N rounds. The
// rate is set by the schedule, so ns/op is the wall time per round (1 s/N if
// the engine keeps up); what it costs shows in cpu-µs/round (process CPU,
// user and system, listeners' accepts included) and allocs/op; a checker
// that falls behind shows in skipped rounds.
func BenchmarkEngine(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) { benchmarkEngine(b, n) })
	}
}

func benchmarkEngine(b *testing.B, n int) {
	var addrs []netip.AddrPort
	for range 16 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		addrs = append(addrs, netip.MustParseAddrPort(ln.Addr().String()))
	}
	var done, failed atomic.Int64
	finished := make(chan struct{})
	want := int64(b.N)
	reg := prometheus.NewRegistry()
	e, err := NewEngine(Options{Registerer: reg, roundDone: func(string, time.Time) {
		if done.Add(1) == want {
			close(finished)
		}
	}, OnChange: func(string, bool) { failed.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	spec := Defaults()
	spec.Interval, spec.Timeout = time.Second, 400*time.Millisecond
	targets := make([]Target, n)
	for i := range targets {
		targets[i] = Target{Key: fmt.Sprintf("ns/svc-%d/cluster-%d", i, i%3), Cluster: fmt.Sprintf("cluster-%d", i%3),
			Addrs: []netip.AddrPort{addrs[i%len(addrs)]}, Spec: spec}
	}
	if err := e.Set(targets); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	go func() { stopped <- e.Run(ctx) }()
	<-finished
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	cancel()
	<-stopped
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rounds/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/round")
	b.ReportMetric(gather(b, reg)["kfed_healthcheck_rounds_skipped_total"], "skipped")
	if f := failed.Load(); f > 0 {
		b.Errorf("%d targets turned unhealthy against listeners that accept", f)
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
