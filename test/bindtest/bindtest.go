// Package bindtest starts a real BIND 9 (named) for tests: authoritative for
// one zone, on a 127.0.0.1 high port, from a temporary folder, accepting
// dynamic updates and zone transfers signed with a TSIG key it generates.
// The server is stopped when the test ends, and dies with the test binary if
// that is killed.
//
// named comes from the Debian package bind9; hack/install-bind.sh installs
// it. Without it, Start fails the test (it does not skip): a provider that
// was not tested against a real server has not been tested.
package bindtest

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/devenv/process"
)

// KeyName is the TSIG key's name.
const KeyName = "kfed-test."

// namedLogLines is how much of named's log a failed test shows.
const namedLogLines = 40

// Server is a running named.
type Server struct {
	// Addr is host:port, for UDP and TCP.
	Addr string
	// Zone is the zone it serves, without a trailing dot.
	Zone string
	// SecretFile holds the base64 TSIG secret for KeyName (HMAC-SHA256).
	SecretFile string
	// Secret is the same secret.
	Secret string
	// Dir is the server's working folder (config, zone, journal, log).
	Dir string

	named string
	log   *process.Output

	mu sync.Mutex
	p  *process.Process // the running named
}

// Named returns the path of named, or an error naming the script that
// installs it.
func Named() (string, error) {
	if p, err := exec.LookPath("named"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/named"); err == nil {
		return "/usr/sbin/named", nil
	}
	return "", fmt.Errorf("named (BIND 9) is not installed: run hack/install-bind.sh")
}

// Start starts named serving zone, with only an SOA, an NS and the NS's
// address in it, and waits until it answers the zone's SOA.
func Start(t testing.TB, zone string) *Server {
	t.Helper()
	return StartDenying(t, zone)
}

// StartDenying is Start with an update-policy that refuses updates of the
// names denied (any type, the key allowed every other name of the zone): an
// update touching one of them is answered REFUSED, whole, as BIND answers
// what its policy denies.
func StartDenying(t testing.TB, zone string, denied ...string) *Server {
	t.Helper()
	named, err := Named()
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for range 3 { // a free port can be taken between choosing and binding
		s, err := start(t, named, zone, denied)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("starting named: %v", last)
	return nil
}

// updatePolicy is the zone's statement allowing the key's updates: every
// name but those denied.
func updatePolicy(denied []string) string {
	if len(denied) == 0 {
		return fmt.Sprintf("allow-update { key %q; };", KeyName)
	}
	var b strings.Builder
	b.WriteString("update-policy {")
	for _, n := range denied {
		fmt.Fprintf(&b, " deny %q name %q ANY;", KeyName, strings.TrimSuffix(n, ".")+".")
	}
	fmt.Fprintf(&b, " grant %q zonesub ANY; };", KeyName)
	return b.String()
}

func start(t testing.TB, named, zone string, denied []string) (*Server, error) {
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	s := &Server{
		Addr:       net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Zone:       zone,
		SecretFile: filepath.Join(dir, "tsig.secret"),
		Secret:     base64.StdEncoding.EncodeToString(key),
		Dir:        dir,
		log:        &process.Output{},
	}
	conf := fmt.Sprintf(`options {
	directory %[1]q;
	pid-file none;
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
	session-keyfile none;
};
controls { };
key %[3]q { algorithm hmac-sha256; secret %[4]q; };
zone %[5]q {
	type primary;
	file %[6]q;
	%[7]s
	allow-transfer { key %[3]q; };
};
`, dir, port, KeyName, s.Secret, zone, filepath.Join(dir, "zone.db"), updatePolicy(denied))
	zoneFile := fmt.Sprintf(`$TTL 300
@ IN SOA ns.%[1]s. hostmaster.%[1]s. 1 3600 600 86400 30
@ IN NS ns.%[1]s.
ns IN A 127.0.0.1
`, zone)
	for name, body := range map[string]string{"named.conf": conf, "zone.db": zoneFile, "tsig.secret": s.Secret + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	s.named = named
	if err := s.run(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			// A line per updated record: all of it would bury the test's
			// own error, which go test prints before the cleanups' logs.
			saved := filepath.Join(os.TempDir(), "kfed-named-"+strings.ReplaceAll(t.Name(), "/", "_")+".log")
			if err := os.WriteFile(saved, []byte(s.log.String()), 0o600); err != nil {
				saved = fmt.Sprintf("not saved: %v", err)
			}
			t.Logf("named log, last %d lines (all of it: %s):\n%s", namedLogLines, saved, s.log.Tail(namedLogLines))
		}
	})
	return s, nil
}

// run starts named from s.Dir and waits until it answers the SOA.
func (s *Server) run() error {
	// -g: foreground, log to stderr; -n 1: one worker (the machine is shared).
	cmd := exec.Command(s.named, "-g", "-4", "-n", "1", "-c", filepath.Join(s.Dir, "named.conf"))
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = s.log, s.log
	p, err := process.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.named, err)
	}
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !s.answersSOA() {
		select {
		case <-p.Done():
			return fmt.Errorf("named exited (%v) before answering:\n%s", p.Err(), s.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("named did not answer the SOA of %s within 10s:\n%s", s.Zone, s.log)
		}
	}
	return nil
}

// stop ends named with SIGTERM, and SIGKILL after 5 s.
func (s *Server) stop() { s.proc().Stop(5 * time.Second) }

// Kill ends named at once with SIGKILL, as a crash would: what it has
// acknowledged is in its journal, nothing else is saved.
func (s *Server) Kill() { s.proc().Kill() }

// Restart starts a named that Kill ended again, on the same port from the
// same folder (its zone file and journal), and waits until it answers.
func (s *Server) Restart() error {
	if s.proc().Running() {
		return errors.New("bindtest: named is still running")
	}
	return s.run()
}

func (s *Server) proc() *process.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

func (s *Server) answersSOA() bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(s.Zone), dns.TypeSOA)
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	r, _, err := c.Exchange(m, s.Addr)
	return err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
}

// Log returns what named has written so far.
func (s *Server) Log() string { return s.log.String() }

// Query asks the server for name/type over UDP (TCP if truncated) and
// returns the answer section: what a resolver would see, not the provider's
// listing.
func (s *Server) Query(t testing.TB, name string, qtype uint16) []dns.RR {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(4096, false)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, s.Addr)
	if err == nil && r.Truncated {
		r, _, err = (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, s.Addr)
	}
	if err != nil {
		t.Fatalf("querying %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r.Answer
}

// Answers returns the rdata of the answer records of type qtype for name,
// sorted, as a resolver would see them ("127.0.0.1", "0 1 80 host.").
func (s *Server) Answers(t testing.TB, name string, qtype uint16) []string {
	t.Helper()
	var out []string
	for _, rr := range s.Query(t, name, qtype) {
		if rr.Header().Rrtype == qtype {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	slices.Sort(out)
	return out
}

// freePort returns a port free for both UDP and TCP on 127.0.0.1.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free for both TCP and UDP")
}

// Transfer returns every record of the zone, by an AXFR signed with the
// TSIG key, without the closing SOA.
func (s *Server) Transfer() ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(s.Zone))
	m.SetTsig(KeyName, dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{KeyName: s.Secret}}
	envs, err := tr.In(m, s.Addr)
	if err != nil {
		return nil, fmt.Errorf("AXFR %s: %w", s.Zone, err)
	}
	var out []dns.RR
	for env := range envs {
		if env.Error != nil {
			return nil, fmt.Errorf("AXFR %s: %w", s.Zone, env.Error)
		}
		out = append(out, env.RR...)
	}
	if len(out) > 1 {
		out = out[:len(out)-1]
	}
	return out, nil
}
