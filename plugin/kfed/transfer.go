package kfed

import (
	"context"
	"errors"
	"time"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/kfed/index"
)

// transferBatch is how many records one message of a transfer gets from
// here; the transfer plugin packs them into messages of up to 64 KB.
const transferBatch = 500

// notifyDelay gathers the changes of one burst (a Service's DNSEndpoint is
// often written several times in a row) into one NOTIFY, well within the
// second a secondary has to catch up.
const notifyDelay = 100 * time.Millisecond

// Transfer implements transfer.Transferer: with a transfer block in the
// server block, secondaries copy the zone by AXFR, and by IXFR, which is
// answered with the SOA alone when the secondary is up to date and with the
// whole zone (AXFR fallback, RFC 1995 section 4) otherwise.
//
// The zone is the SOA, the apex NS and name server addresses, then every
// name's records in name order, then the SOA again. Address records are each
// cluster's load-balancer addresses, as a client outside the clusters gets
// them: a secondary has no cluster of its own, and no weighted order to keep.
func (k *Kfed) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	ap := k.apexOf(zone)
	if ap == nil {
		return nil, transfer.ErrNotAuthoritative
	}
	if !k.synced.Load() {
		return nil, errors.New("kfed: no full list of DNSEndpoints yet")
	}
	// The serial first, the records after: the serial rises only after
	// the records it stands for, so this pairs it with them or newer ones.
	soa := k.soa(zone)
	ch := make(chan []dns.RR, 2)
	if serial != 0 && !olderSerial(serial, soa.(*dns.SOA).Serial) {
		ch <- []dns.RR{soa}
		close(ch)
		return ch, nil
	}
	names := k.index.Names()
	go func() {
		defer close(ch)
		batch := append([]dns.RR{soa}, ap.ns...)
		batch = append(batch, ap.glue()...)
		for _, n := range names {
			if matchZone(k.zones, n.Name) != zone {
				continue
			}
			batch = appendZoneRecords(batch, n, zone)
			if len(batch) >= transferBatch {
				ch <- batch
				batch = make([]dns.RR, 0, transferBatch+16)
			}
		}
		ch <- append(batch, soa)
	}()
	return ch, nil
}

// appendZoneRecords appends every record at n for a transfer: a CNAME alone,
// except at the apex, where it would sit beside the SOA and is not served.
func appendZoneRecords(dst []dns.RR, n index.Named, zone string) []dns.RR {
	r := n.Records
	if c := r.CNAME(); c != nil {
		if n.Name == zone {
			return dst
		}
		return append(dst, c)
	}
	for _, qtype := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
		start := len(dst)
		dst = r.AppendAll(dst, qtype)
		dst = dedupe(dst, start)
	}
	dst = append(dst, r.SRV()...)
	return append(dst, r.TXT()...)
}

// dedupe drops repeats among dst[start:]: two clusters may share an
// address, and a record set holds each record once.
func dedupe(dst []dns.RR, start int) []dns.RR {
	out := dst[:start]
	for i := start; i < len(dst); i++ {
		dup := false
		for _, kept := range out[start:] {
			if dns.IsDuplicate(kept, dst[i]) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, dst[i])
		}
	}
	return out
}

// olderSerial reports whether serial a is older than b in RFC 1982 serial
// arithmetic.
func olderSerial(a, b uint32) bool { return a != b && b-a < 1<<31 }

// notifier sends NOTIFY for the plugin's zones to the secondaries the
// transfer block names, after the zones' serial changes.
type notifier struct {
	xfer    *transfer.Transfer
	zones   []string
	serial  func() uint32
	changed chan struct{} // holds one pending signal at most
	cancel  context.CancelFunc
	done    chan struct{}
}

func newNotifier(xfer *transfer.Transfer, zones []string, serial func() uint32) *notifier {
	return &notifier{xfer: xfer, zones: zones, serial: serial, changed: make(chan struct{}, 1), done: make(chan struct{})}
}

// signal tells the notifier the serial may have changed; it never blocks.
func (n *notifier) signal() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// start runs the notifier until stop. The first signal always notifies, so
// that secondaries check a primary that has just started.
func (n *notifier) start() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		sent, first := uint32(0), true
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.changed:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(notifyDelay):
			}
			s := n.serial()
			if s == sent && !first {
				continue
			}
			sent, first = s, false
			for _, z := range n.zones {
				if err := n.xfer.Notify(z); err != nil {
					log.Warningf("NOTIFY for %s at serial %d: %v", z, s, err)
				}
			}
		}
	}()
}

func (n *notifier) stop() {
	if n.cancel != nil {
		n.cancel()
		<-n.done
	}
}
