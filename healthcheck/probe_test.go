package healthcheck

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// listen returns a loopback listener that accepts connections until the test
// ends, closing each at once.
func listen(t *testing.T) net.Listener {
	return listenServing(t, func(c net.Conn) { c.Close() })
}

// listenServing is listen with serve given each accepted connection.
func listenServing(t *testing.T, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	return ln
}

// refusedAddr returns a loopback address nothing listens on.
func refusedAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := addrOf(t, ln.Addr())
	ln.Close()
	return a
}

func addrOf(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func serverAddr(t *testing.T, s *httptest.Server) netip.AddrPort {
	return addrOf(t, s.Listener.Addr())
}

func TestProbe(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(strings.Repeat("x", 1<<20))) // more than a probe reads
		case "/unavailable":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	tcpOpen := addrOf(t, listen(t).Addr())
	refused := refusedAddr(t)

	httpSpec := func(kind Kind, path string) Spec {
		s := Defaults()
		s.Kind, s.Path, s.StatusMin, s.StatusMax = kind, path, 200, 399
		return s
	}
	withTimeout := func(s Spec, d time.Duration) Spec { s.Timeout = d; return s }
	withStatus := func(s Spec, lo, hi int) Spec { s.StatusMin, s.StatusMax = lo, hi; return s }
	withPort := func(s Spec, p uint16) Spec { s.Port = p; return s }

	tests := []struct {
		name   string
		addr   netip.AddrPort
		spec   Spec
		ok     bool
		reason string
	}{
		{name: "tcp to an accepting port passes", addr: tcpOpen, spec: Defaults(), ok: true, reason: "connected"},
		{name: "tcp to a closed port fails as refused", addr: refused, spec: Defaults(), reason: "connection refused"},
		{name: "port setting probes that port instead", addr: refused, spec: withPort(Defaults(), tcpOpen.Port()), ok: true, reason: "connected"},
		{name: "http 200 passes", addr: serverAddr(t, plain), spec: httpSpec(KindHTTP, "/ok"), ok: true, reason: "status 200"},
		{name: "http 503 fails", addr: serverAddr(t, plain), spec: httpSpec(KindHTTP, "/unavailable"), reason: "status 503"},
		{name: "http 302 is a status, not followed", addr: serverAddr(t, plain), spec: httpSpec(KindHTTP, "/moved"), ok: true, reason: "status 302"},
		{name: "http 302 fails a 200-only range", addr: serverAddr(t, plain), spec: withStatus(httpSpec(KindHTTP, "/moved"), 200, 200), reason: "status 302"},
		{name: "http 204 passes an exact range", addr: serverAddr(t, plain), spec: withStatus(httpSpec(KindHTTP, "/nocontent"), 204, 204), ok: true, reason: "status 204"},
		{name: "http 404 on an unknown path fails", addr: serverAddr(t, plain), spec: httpSpec(KindHTTP, "/nothing"), reason: "status 404"},
		{name: "slow server beyond the timeout fails as timeout", addr: serverAddr(t, plain),
			spec: withTimeout(httpSpec(KindHTTP, "/slow"), 300*time.Millisecond), reason: "timeout"},
		{name: "http to a closed port fails as refused", addr: refused, spec: httpSpec(KindHTTP, "/"), reason: "connection refused"},
		{name: "https with a self-signed certificate passes", addr: serverAddr(t, secure), spec: httpSpec(KindHTTPS, "/ok"), ok: true, reason: "status 200"},
		{name: "https 503 fails", addr: serverAddr(t, secure), spec: httpSpec(KindHTTPS, "/unavailable"), reason: "status 503"},
		{name: "https to a plain http server fails", addr: serverAddr(t, plain), spec: httpSpec(KindHTTPS, "/ok"), reason: "server gave HTTP response to HTTPS client"},
		{name: "http to a tcp listener that hangs up fails", addr: tcpOpen, spec: httpSpec(KindHTTP, "/"), reason: "connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newProber(netip.Addr{}).probe(context.Background(), tt.addr, tt.spec)
			if r.OK != tt.ok || !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("got ok %v reason %q, want ok %v reason %q", r.OK, r.Reason, tt.ok, tt.reason)
			}
			if r.OK && r.Latency <= 0 {
				t.Errorf("latency %v", r.Latency)
			}
		})
	}
}

// TestTCPProbeLeavesNoTimeWait: a checker probing thousands of addresses
// a second would otherwise hold a socket in TIME_WAIT for a minute after
// each probe. The server here waits for the probe to close first, as a
// load balancer does, so any TIME_WAIT would be the checker's.
func TestTCPProbeLeavesNoTimeWait(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp to count sockets in")
	}
	ln := listenServing(t, func(c net.Conn) {
		go func() {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c) // until the probe's close
		}()
	})
	addr := addrOf(t, ln.Addr())
	p := newProber(netip.Addr{})
	const probes = 20
	for range probes {
		if r := p.probe(context.Background(), addr, Defaults()); !r.OK {
			t.Fatalf("probe: %s", r.Reason)
		}
	}
	time.Sleep(100 * time.Millisecond) // the server's side of the last close
	if n := timeWaitTo(t, addr.Port()); n > 0 {
		t.Errorf("%d of %d probes left a socket in TIME_WAIT towards %v", n, probes, addr)
	}
}

// timeWaitTo counts the sockets in TIME_WAIT whose remote port is port.
func timeWaitTo(t *testing.T, port uint16) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st ...; addresses are HEXIP:HEXPORT.
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "06" { // 06: TIME_WAIT
			continue
		}
		if _, rem, _ := strings.Cut(f[2], ":"); rem == fmt.Sprintf("%04X", port) {
			n++
		}
	}
	return n
}

func TestProbeHTTPRequest(t *testing.T) {
	var host, uri string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, uri = r.Host, r.URL.RequestURI()
		if !r.Close {
			t.Error("keep-alive asked for")
		}
	}))
	defer s.Close()
	spec := Defaults()
	spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax = KindHTTP, "/healthz?deep=1", 200, 399
	addr := serverAddr(t, s)
	if r := newProber(netip.Addr{}).probe(context.Background(), addr, spec); !r.OK {
		t.Fatal(r.Reason)
	}
	if host != addr.String() {
		t.Errorf("Host %q, want the address %q", host, addr)
	}
	if uri != "/healthz?deep=1" {
		t.Errorf("request URI %q", uri)
	}
}

// A probe with a host asks for it: the Host header over http, and the TLS
// server name too over https, as a Gateway routing per host needs.
func TestProbeAsksForItsHost(t *testing.T) {
	var host, sni string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host = r.Host
		if r.TLS != nil {
			sni = r.TLS.ServerName
		}
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	secure := httptest.NewTLSServer(h)
	defer secure.Close()
	for _, tt := range []struct {
		kind Kind
		s    *httptest.Server
		sni  string
	}{{KindHTTP, plain, ""}, {KindHTTPS, secure, "shop.example.com"}} {
		host, sni = "", ""
		spec := Defaults()
		spec.Kind, spec.Path, spec.Host, spec.StatusMin, spec.StatusMax = tt.kind, "/", "shop.example.com", 200, 399
		if r := newProber(netip.Addr{}).probe(context.Background(), serverAddr(t, tt.s), spec); !r.OK {
			t.Fatalf("%s: %s", tt.kind, r.Reason)
		}
		if host != "shop.example.com" || sni != tt.sni {
			t.Errorf("%s: Host %q, server name %q; want shop.example.com and %q", tt.kind, host, sni, tt.sni)
		}
	}
}

func TestProbeTimeoutIsBounded(t *testing.T) {
	// A server that accepts and never answers: the probe must end near its
	// timeout, not the server's pace. Generous bound for a loaded machine.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	spec := Defaults()
	spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax, spec.Timeout = KindHTTP, "/", 200, 399, 200*time.Millisecond
	start := time.Now()
	r := newProber(netip.Addr{}).probe(context.Background(), addrOf(t, hang.Addr()), spec)
	if r.OK || r.Reason != "timeout" {
		t.Errorf("got %+v, want a timeout", r)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("probe took %v with a 200ms timeout", d)
	}
}

func TestProbeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newProber(netip.Addr{}).probe(ctx, addrOf(t, listen(t).Addr()), Defaults())
	if r.OK || r.Reason != "canceled" {
		t.Errorf("got %+v, want canceled", r)
	}
}
