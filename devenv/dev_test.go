package devenv

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
)

// lostLease is a manager that stops on its own the first times it runs, as
// a controller-runtime manager does when it loses its leader lease, then
// runs until it is stopped.
type lostLease struct {
	runs  *atomic.Int32
	loses int32
}

func (m lostLease) Start(ctx context.Context) error {
	if m.runs.Add(1) <= m.loses {
		return errors.New("leader election lost")
	}
	<-ctx.Done()
	return nil
}

func TestDevControllerStandsByAgainAfterLosingItsLease(t *testing.T) {
	var runs, built atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runController(ctx, func() (starter, error) {
			built.Add(1)
			return lostLease{runs: &runs, loses: 2}, nil
		}, logr.Discard(), time.Millisecond)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runs.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the environment's controller ended after a lost lease: %v", err)
	default:
	}
	if built.Load() != 3 {
		t.Errorf("%d managers built, want a new one after each lost lease (3)", built.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stopping: %v", err)
	}

	// A manager that cannot be built is an error at once.
	err := runController(context.Background(), func() (starter, error) { return nil, errors.New("no scheme") }, logr.Discard(), time.Millisecond)
	if err == nil {
		t.Error("a manager that cannot be built is not reported")
	}
}

// TestDevReadyWaitsForThirtyAddresses serves a name with thirty addresses
// the way CoreDNS does, truncated to the size the query offers: ready must
// see all thirty, which do not fit the 512 bytes of a query without EDNS.
func TestDevReadyWaitsForThirtyAddresses(t *testing.T) {
	const n = 30
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		r := new(dns.Msg)
		r.SetReply(q)
		for i := range n {
			r.Answer = append(r.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
				A:   net.IPv4(127, byte(100+i), 0, 1),
			})
		}
		size := dns.MinMsgSize
		if opt := q.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		r.Truncate(size)
		_ = w.WriteMsg(r)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := waitResolves(ctx, pc.LocalAddr().String(), "demo.default.dev.svc.kfed.test", n, make(chan error)); err != nil {
		t.Errorf("ready did not see the %d members' addresses: %v", n, err)
	}
}
