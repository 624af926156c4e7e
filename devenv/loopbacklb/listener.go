package loopbacklb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SlowDelay is how late a slow Service's listeners answer HTTP requests.
const SlowDelay = 100 * time.Millisecond

// listener accepts connections on one address and port of one Service.
type listener struct {
	ln      net.Listener
	cluster string
	// serviceName is the Service's namespace/name, which HTTP answers carry.
	serviceName string
	httpError   atomic.Bool
	slow        atomic.Bool
	// load is the Service's, shared with its other listeners.
	load  *serviceLoad
	wg    sync.WaitGroup
	conns sync.Map // net.Conn → struct{}, so close can end them
	// done is closed by close, to cut short the requests being held.
	done     chan struct{}
	doneOnce sync.Once
}

func newListener(addr, cluster, serviceName string, load *serviceLoad) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	l := &listener{ln: ln, cluster: cluster, serviceName: serviceName, load: load, done: make(chan struct{})}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

func (l *listener) setHTTPError(on bool) { l.httpError.Store(on) }

func (l *listener) setSlow(on bool) { l.slow.Store(on) }

func (l *listener) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.conns.Store(c, struct{}{})
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.conns.Delete(c)
			defer c.Close()
			l.serve(c)
		}()
	}
}

// close stops accepting and ends open connections, as a failed load balancer
// would.
func (l *listener) close() {
	l.doneOnce.Do(func() { close(l.done) })
	l.ln.Close()
	l.conns.Range(func(c, _ any) bool {
		c.(net.Conn).Close()
		return true
	})
	l.wg.Wait()
}

var httpMethods = [][]byte{
	[]byte("GET "), []byte("HEAD "), []byte("POST "), []byte("PUT "),
	[]byte("DELETE "), []byte("OPTIONS "), []byte("PATCH "),
}

// serve answers HTTP if the client's first bytes are an HTTP request line,
// and echoes otherwise.
func (l *listener) serve(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	br := bufio.NewReader(c)
	if _, err := br.Peek(1); err != nil {
		return
	}
	head, _ := br.Peek(br.Buffered())
	for _, m := range httpMethods {
		if bytes.HasPrefix(head, m) {
			l.serveHTTP(c, br)
			return
		}
	}
	_, _ = io.Copy(c, br)
}

func (l *listener) serveHTTP(c net.Conn, br *bufio.Reader) {
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
		// Requests to /healthz, what health checks probe, are neither
		// counted nor held, so that a checker reads the load clients make
		// rather than its own.
		var own time.Time // when this request went in flight; zero: not counted
		var hold time.Duration
		if req.URL.Path != "/healthz" {
			own = time.Now()
			l.load.inFlight.add(own, 1)
			hold = l.load.serviceTime()
		}
		if l.slow.Load() {
			hold += SlowDelay
		}
		if !l.hold(hold) {
			if !own.IsZero() {
				l.load.inFlight.add(time.Now(), -1)
			}
			return
		}
		status, body := http.StatusOK, fmt.Sprintf("%s %s\n", l.cluster, l.serviceName)
		switch {
		case l.httpError.Load():
			status, body = http.StatusServiceUnavailable, "unhealthy (loopbacklb.kfed.io/failure)\n"
		case req.URL.Path == "/healthz":
			body = "ok\n"
		}
		resp := &http.Response{
			StatusCode:    status,
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			Body:          io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)),
			Close:         req.Close,
		}
		now := time.Now()
		if v := l.load.report(now, own); v != "" {
			resp.Header.Set(LoadHeader, v)
		}
		if !own.IsZero() {
			l.load.inFlight.add(now, -1)
		}
		if req.Method == http.MethodHead {
			resp.Body = http.NoBody
		}
		if err := resp.Write(c); err != nil || req.Close {
			return
		}
	}
}

// hold waits d, or until the listener closes; it reports whether to answer.
func (l *listener) hold(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}
