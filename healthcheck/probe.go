package healthcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Result is the outcome of probing one address once.
type Result struct {
	OK      bool
	Latency time.Duration // until connected (tcp) or until the response headers (http, https)
	Reason  string        // short: "connected", "status 200", "connection refused", "timeout", "status 503"
	// Load is the endpoint's load as its answer's ORCA report gave it
	// (http, https; readLoad), when Loaded; LoadErr says why a report on
	// the answer could not be read.
	Load    float64
	Loaded  bool
	LoadErr error
}

// maxDrain is how much of a response body a probe reads before closing: a
// server that writes a body expects it read, but a health page has no
// business being large.
const maxDrain = 4 << 10

// prober holds what probes can share: an HTTP client whose transport keeps
// no connections, so sharing it shares no state between probes.
type prober struct {
	dialer net.Dialer
	client *http.Client
}

// newProber returns a prober whose connections leave from source, when it
// is valid.
func newProber(source netip.Addr) *prober {
	p := &prober{dialer: net.Dialer{KeepAlive: -1}}
	if source.IsValid() {
		p.dialer.LocalAddr = &net.TCPAddr{IP: source.AsSlice()}
	}
	p.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            p.dial,
			TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see probe: an address has no name to verify
			DisableKeepAlives:      true,
			DisableCompression:     true,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p
}

// probe probes addr once as spec says (at spec.Port instead of addr's port
// when that is set), within spec.Timeout and ctx:
//   - tcp passes when a connection is established; it is closed at once,
//     with a reset (see dial);
//   - http and https GET spec.Path with the Host header (and, for https,
//     the TLS server name) being spec.Host, or the address without one, and
//     pass when the status lies in spec's range. Redirects are not
//     followed (a 3xx is a status like any other), the body is read up to
//     4 KiB and discarded, and the connection is not kept alive but reset:
//     each probe is a fresh connection, as a new client's would be. https
//     does not verify the server's certificate: a load balancer's address
//     has no name to verify it against, and the check is whether the
//     endpoint answers, not whom it belongs to. Proxy settings in the
//     environment are ignored.
func (p *prober) probe(ctx context.Context, addr netip.AddrPort, spec Spec) Result {
	if spec.Port != 0 {
		addr = netip.AddrPortFrom(addr.Addr(), spec.Port)
	}
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	start := time.Now()
	switch spec.Kind {
	case KindTCP:
		conn, err := p.dial(ctx, "tcp", addr.String())
		if err != nil {
			return Result{Latency: time.Since(start), Reason: reason(ctx, err)}
		}
		lat := time.Since(start)
		conn.Close()
		return Result{OK: true, Latency: lat, Reason: "connected"}
	case KindHTTP, KindHTTPS:
		return p.get(ctx, start, addr, spec)
	default:
		return Result{Reason: fmt.Sprintf("unknown check kind %q", spec.Kind)}
	}
}

// dial connects as the prober's dialer does, and has the connection end
// with a reset when closed: a probe has said all it will by then, and an
// orderly close would leave the checker a socket in TIME_WAIT for a minute
// after each probe (60,000 of them at 1,000 probes a second, each holding
// an ephemeral port towards its address). kubelet's probes set a linger
// since Kubernetes 1.27 for the same reason.
func (p *prober) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := p.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// Best effort: were it refused, the close would be orderly, which
		// is still a close.
		_ = tc.SetLinger(0)
	}
	return conn, nil
}

func (p *prober) get(ctx context.Context, start time.Time, addr netip.AddrPort, spec Spec) Result {
	u, err := url.Parse(string(spec.Kind) + "://" + addr.String() + spec.Path)
	if err != nil {
		return Result{Reason: fmt.Sprintf("path %q: %v", spec.Path, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{Reason: err.Error()}
	}
	req.Header.Set("User-Agent", "kfed-healthcheck")
	client := p.client
	if spec.Host != "" {
		// The address is dialled; the host is what the server is asked for.
		req.Host = spec.Host
		if spec.Kind == KindHTTPS {
			client = p.withServerName(spec.Host)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{Latency: time.Since(start), Reason: reason(ctx, err)}
	}
	lat := time.Since(start)
	// The status decides; the body is read only so the server sees a client
	// that took its answer.
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	resp.Body.Close()
	r := Result{Latency: lat, Reason: "status " + strconv.Itoa(resp.StatusCode)}
	r.OK = resp.StatusCode >= spec.StatusMin && resp.StatusCode <= spec.StatusMax
	r.Load, r.Loaded, r.LoadErr = readLoad(resp.Header, spec)
	return r
}

// withServerName is the prober's client sending name as the TLS server
// name (SNI), so that a server with a certificate per host answers with
// that host's. Certificates are still not verified (see probe).
func (p *prober) withServerName(name string) *http.Client {
	t := p.client.Transport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, ServerName: name} //nolint:gosec // as in newProber
	return &http.Client{Transport: t, CheckRedirect: p.client.CheckRedirect}
}

// reason says in a few words why a probe failed.
func reason(ctx context.Context, err error) string {
	var tlsErr tls.RecordHeaderError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case ctx.Err() != nil:
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without a response"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.As(err, &tlsErr):
		return "not a TLS server"
	}
	// Drop the "Get URL:" and "dial tcp A->B:" prefixes: the caller knows them.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		err = opErr.Err
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
