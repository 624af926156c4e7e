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
	wg          sync.WaitGroup
	conns       sync.Map // net.Conn → struct{}, so close can end them
}

func newListener(addr, cluster, serviceName string) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	l := &listener{ln: ln, cluster: cluster, serviceName: serviceName}
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
		if l.slow.Load() {
			time.Sleep(SlowDelay)
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
		if req.Method == http.MethodHead {
			resp.Body = http.NoBody
		}
		if err := resp.Write(c); err != nil || req.Close {
			return
		}
	}
}
