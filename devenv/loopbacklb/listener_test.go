package loopbacklb

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestListenerServes is what a client of one load-balancer address sees:
// a TCP probe that connects and leaves at once, an echo, HTTP with the
// failure switch off and on, and, once closed, a refusal.
func TestListenerServes(t *testing.T) {
	l, err := newListener("127.0.0.1:0", "cluster-1", "default/web", &serviceLoad{})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.ln.Addr().String()
	dial := func(t *testing.T) net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	get := func(t *testing.T, path string) (int, string) {
		t.Helper()
		c := dial(t)
		defer c.Close()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"TCP probes connect and leave, many times over", func(t *testing.T) {
			for range 2000 {
				dial(t).Close()
			}
		}},
		{"a probe that resets is taken too", func(t *testing.T) {
			c := dial(t)
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}},
		{"bytes are echoed", func(t *testing.T) {
			c := dial(t)
			defer c.Close()
			if _, err := c.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != "ping\n" {
				t.Fatalf("echo = %q, %v; want %q", got, err, "ping\n")
			}
		}},
		{"HTTP names the cluster and Service", func(t *testing.T) {
			if code, body := get(t, "/"); code != http.StatusOK || body != "cluster-1 default/web\n" {
				t.Fatalf("GET / = %d %q", code, body)
			}
			if code, body := get(t, "/healthz"); code != http.StatusOK || body != "ok\n" {
				t.Fatalf("GET /healthz = %d %q", code, body)
			}
		}},
		{"HTTP fails when told to", func(t *testing.T) {
			l.setHTTPError(true)
			defer l.setHTTPError(false)
			if code, _ := get(t, "/healthz"); code != http.StatusServiceUnavailable {
				t.Fatalf("GET /healthz = %d, want 503", code)
			}
		}},
		{"closed, it refuses", func(t *testing.T) {
			open := dial(t)
			l.close()
			if _, err := open.Read(make([]byte, 1)); err == nil {
				t.Error("an open connection outlived its listener")
			}
			_, err := net.DialTimeout("tcp", addr, time.Second)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dial after close: %v, want connection refused", err)
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
