package reliability

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/dns/publish"
)

// prober queries CoreDNS for the stable Services' global names without
// pause and counts how it answers: with the addresses it had when probing
// began, with other addresses, SERVFAIL, another error code, or not at all.
type prober struct {
	addr  string
	names []string
	want  map[string][]string

	mu                                        sync.Mutex
	queries, complete, other, servfail, rcode int
	timeouts                                  int
	firstServfail                             time.Time
	began                                     time.Time
	lost                                      []time.Duration // when each unanswered query was sent, since began
}

// probe starts probing the stable Services, whose answers it learns first;
// stop ends it.
func (b *bed) probe(t *testing.T) (p *prober, stop func()) {
	p = &prober{addr: b.dnsAddr, want: map[string][]string{}, began: time.Now()}
	for i := range b.form.stable {
		name := publish.NewNames(federation, zone, ns, stableName(i)).Global() + "."
		got, _, err := queryA(b.dnsAddr, name)
		if err != nil || len(got) == 0 {
			t.Fatalf("probing %s before the fault: %v %v", name, got, err)
		}
		p.names = append(p.names, name)
		p.want[name] = got
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	return p, func() { cancel(); <-done }
}

func (p *prober) run(ctx context.Context) {
	c := &dns.Client{Timeout: time.Second}
	for i := 0; ctx.Err() == nil; i++ {
		name := p.names[i%len(p.names)]
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		sent := time.Since(p.began).Round(time.Millisecond)
		r, _, err := c.ExchangeContext(ctx, m, p.addr)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.queries++
		switch {
		case err != nil:
			p.timeouts++
			p.lost = append(p.lost, sent)
		case r.Rcode == dns.RcodeServerFailure:
			p.servfail++
			if p.firstServfail.IsZero() {
				p.firstServfail = time.Now()
			}
		case r.Rcode != dns.RcodeSuccess:
			p.rcode++
		default:
			var got []string
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					got = append(got, a.A.String())
				}
			}
			slices.Sort(got)
			if slices.Equal(got, p.want[name]) {
				p.complete++
			} else {
				p.other++
			}
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// probeCounts are a prober's counts.
type probeCounts struct {
	queries, complete, other, servfail, rcode, timeouts int
}

func (p *prober) counts() probeCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return probeCounts{p.queries, p.complete, p.other, p.servfail, p.rcode, p.timeouts}
}
