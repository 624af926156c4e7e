package loopbacklb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// lbTest is a load balancer without an API server: the tests hand it a
// Service as Reconcile would, through ensure.
type lbTest struct {
	lb     *LB
	mu     sync.Mutex
	logged []string
}

func newLBTest(t *testing.T) *lbTest {
	lt := &lbTest{}
	lt.lb = &LB{
		opts: Options{
			Cluster: "cluster-1",
			Block:   netip.MustParsePrefix("127.0.0.0/16"),
			Logger: funcr.New(func(_, args string) {
				lt.mu.Lock()
				defer lt.mu.Unlock()
				lt.logged = append(lt.logged, args)
			}, funcr.Options{}),
		},
		svcs:  map[types.NamespacedName]*service{},
		inUse: map[netip.Addr]types.NamespacedName{},
	}
	t.Cleanup(lt.lb.closeAll)
	return lt
}

var webKey = types.NamespacedName{Namespace: "default", Name: "web"}

// serve has the load balancer take the Service default/web with these
// annotations and ports, and returns the listeners' addresses.
func (lt *lbTest) serve(t *testing.T, annotations map[string]string, ports []int32) []string {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: webKey.Namespace, Name: webKey.Name, Annotations: annotations},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
	}
	addr, err := lt.lb.ensure(webKey, svc)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, net.JoinHostPort(addr.String(), strconv.Itoa(int(p))))
	}
	return addrs
}

func (lt *lbTest) logs() string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return strings.Join(lt.logged, "\n")
}

// freePorts finds n ports free on 127.0.0.1; should one be taken again
// before ensure listens, ensure moves on to another address.
func freePorts(t *testing.T, n int) []int32 {
	t.Helper()
	var ports []int32
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, int32(ln.Addr().(*net.TCPAddr).Port))
	}
	return ports
}

// answer is what a client sees of one HTTP request.
type answer struct {
	code int
	load string // LoadHeader's value; "" when absent
	took time.Duration
}

// fetch GETs path from addr on a connection of its own, as a client or a
// health checker would.
func fetch(addr, path string) (answer, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return answer{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err := req.Write(c); err != nil {
		return answer{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return answer{}, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return answer{code: resp.StatusCode, load: resp.Header.Get(LoadHeader), took: time.Since(start)}, nil
}

func mustFetch(t *testing.T, addr, path string) answer {
	t.Helper()
	a, err := fetch(addr, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return a
}

// utilization reads application_utilization from LoadHeader's value.
func utilization(t *testing.T, load string) float64 {
	t.Helper()
	v, ok := strings.CutPrefix(load, "TEXT application_utilization=")
	if !ok {
		t.Fatalf("%s = %q, want TEXT application_utilization=U", LoadHeader, load)
	}
	u, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", LoadHeader, load, err)
	}
	return u
}

func TestLoadAnnotationsReport(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantCode    int
		wantLoad    string // on / and /healthz alike
		wantLogged  string // "": nothing logged
	}{
		{name: "no annotation, no header"},
		{name: "a fixed utilization",
			annotations: map[string]string{UtilizationAnnotation: "0.95"},
			wantLoad:    "TEXT application_utilization=0.95"},
		{name: "a fixed utilization of zero",
			annotations: map[string]string{UtilizationAnnotation: "0"},
			wantLoad:    "TEXT application_utilization=0"},
		{name: "a fixed utilization above one",
			annotations: map[string]string{UtilizationAnnotation: "1.5"},
			wantLoad:    "TEXT application_utilization=1.5"},
		{name: "a capacity, idle: zero, the request answered not counted",
			annotations: map[string]string{CapacityAnnotation: "4"},
			wantLoad:    "TEXT application_utilization=0"},
		{name: "a fixed utilization wins over a capacity",
			annotations: map[string]string{UtilizationAnnotation: "0.5", CapacityAnnotation: "2"},
			wantLoad:    "TEXT application_utilization=0.5"},
		{name: "http-error answers 503, still with the header",
			annotations: map[string]string{FailureAnnotation: FailureHTTPError, UtilizationAnnotation: "0.95"},
			wantCode:    http.StatusServiceUnavailable,
			wantLoad:    "TEXT application_utilization=0.95"},
		{name: "a utilization that is not a number",
			annotations: map[string]string{UtilizationAnnotation: "high"},
			wantLogged:  UtilizationAnnotation},
		{name: "a negative utilization",
			annotations: map[string]string{UtilizationAnnotation: "-0.1"},
			wantLogged:  UtilizationAnnotation},
		{name: "a utilization of NaN",
			annotations: map[string]string{UtilizationAnnotation: "NaN"},
			wantLogged:  UtilizationAnnotation},
		{name: "a capacity of zero",
			annotations: map[string]string{CapacityAnnotation: "0"},
			wantLogged:  CapacityAnnotation},
		{name: "a capacity that is not an integer",
			annotations: map[string]string{CapacityAnnotation: "1.5"},
			wantLogged:  CapacityAnnotation},
		{name: "a malformed capacity leaves the utilization",
			annotations: map[string]string{UtilizationAnnotation: "0.3", CapacityAnnotation: "many"},
			wantLoad:    "TEXT application_utilization=0.3",
			wantLogged:  CapacityAnnotation},
		{name: "a service time that is not a duration",
			annotations: map[string]string{ServiceTimeAnnotation: "soon", CapacityAnnotation: "1"},
			wantLoad:    "TEXT application_utilization=0",
			wantLogged:  ServiceTimeAnnotation},
		{name: "a service time too long",
			annotations: map[string]string{ServiceTimeAnnotation: "11s"},
			wantLogged:  ServiceTimeAnnotation},
		{name: "a negative service time",
			annotations: map[string]string{ServiceTimeAnnotation: "-1s"},
			wantLogged:  ServiceTimeAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := newLBTest(t)
			addr := lt.serve(t, tc.annotations, freePorts(t, 1))[0]
			wantCode := tc.wantCode
			if wantCode == 0 {
				wantCode = http.StatusOK
			}
			for _, path := range []string{"/", "/healthz"} {
				if a := mustFetch(t, addr, path); a.code != wantCode || a.load != tc.wantLoad {
					t.Errorf("GET %s = %d with %s %q, want %d with %q", path, a.code, LoadHeader, a.load, wantCode, tc.wantLoad)
				}
			}
			logs := lt.logs()
			if tc.wantLogged == "" && logs != "" || !strings.Contains(logs, tc.wantLogged) {
				t.Errorf("logged %q, want a line naming %q", logs, tc.wantLogged)
			}
		})
	}
}

// TestLoadAnnotationsChangeLive: a Service reconciled again with other
// annotations changes what its open listeners, every port, report.
func TestLoadAnnotationsChangeLive(t *testing.T) {
	lt := newLBTest(t)
	ports := freePorts(t, 2)
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{map[string]string{UtilizationAnnotation: "0.1"}, "TEXT application_utilization=0.1"},
		{map[string]string{UtilizationAnnotation: "0.7"}, "TEXT application_utilization=0.7"},
		{map[string]string{UtilizationAnnotation: "0.7", FailureAnnotation: FailureSlow}, "TEXT application_utilization=0.7"},
		{nil, ""},
	} {
		for _, addr := range lt.serve(t, tc.annotations, ports) {
			if a := mustFetch(t, addr, "/healthz"); a.load != tc.want {
				t.Errorf("with %v, GET %s/healthz reports %q, want %q", tc.annotations, addr, a.load, tc.want)
			}
		}
	}
}

// TestCapacityReportsRequestsInFlight: requests held by the service time on
// two ports of a Service count together; a /healthz probe, made while
// they are held, reads their average over the last second over the
// capacity, and a second after they end, zero.
func TestCapacityReportsRequestsInFlight(t *testing.T) {
	const held = 2 * time.Second
	lt := newLBTest(t)
	addrs := lt.serve(t, map[string]string{CapacityAnnotation: "2", ServiceTimeAnnotation: held.String()}, freePorts(t, 2))
	start := time.Now()
	answers := make([]answer, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i], errs[i] = fetch(addrs[i%2], "/") })
	}
	time.Sleep(start.Add(loadWindow + 100*time.Millisecond).Sub(time.Now()))
	probe := mustFetch(t, addrs[0], "/healthz")
	if time.Since(start) > held {
		t.Fatalf("the probe came %v after the requests, when they may have ended", time.Since(start))
	}
	// Four in flight throughout the last second, over a capacity of two.
	if u := utilization(t, probe.load); u < 1.8 || u > 2 {
		t.Errorf("while 4 requests were held a second, /healthz reported %q, want about 2", probe.load)
	}
	wg.Wait()
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("GET /: %v", errs[i])
		}
		// Each sees the other three, not itself.
		if u := utilization(t, a.load); u < 1.3 || u > 1.5 {
			t.Errorf("a held request's answer reported %q, want about 1.5", a.load)
		}
	}
	time.Sleep(loadWindow + 50*time.Millisecond)
	if a := mustFetch(t, addrs[1], "/healthz"); a.load != "TEXT application_utilization=0" {
		t.Errorf("a second after the requests ended, /healthz reported %q, want 0", a.load)
	}
}

func TestServiceTimeHoldsRequests(t *testing.T) {
	const serviceTime = 200 * time.Millisecond
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		path        string
		atLeast     time.Duration
		under       time.Duration
	}{
		{"a request is held the service time",
			map[string]string{ServiceTimeAnnotation: serviceTime.String()}, "/", serviceTime, 5 * time.Second},
		{"/healthz is not held",
			map[string]string{ServiceTimeAnnotation: serviceTime.String()}, "/healthz", 0, serviceTime},
		{"slow adds its delay",
			map[string]string{ServiceTimeAnnotation: serviceTime.String(), FailureAnnotation: FailureSlow}, "/", serviceTime + SlowDelay, 5 * time.Second},
		{"slow still delays /healthz, by its delay alone",
			map[string]string{ServiceTimeAnnotation: serviceTime.String(), FailureAnnotation: FailureSlow}, "/healthz", SlowDelay, serviceTime + SlowDelay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := newLBTest(t)
			addr := lt.serve(t, tc.annotations, freePorts(t, 1))[0]
			if a := mustFetch(t, addr, tc.path); a.code != http.StatusOK || a.took < tc.atLeast || a.took >= tc.under {
				t.Errorf("GET %s = %d after %v, want 200 after %v to %v", tc.path, a.code, a.took, tc.atLeast, tc.under)
			}
		})
	}
	t.Run("closing cuts a held request short", func(t *testing.T) {
		lt := newLBTest(t)
		addr := lt.serve(t, map[string]string{ServiceTimeAnnotation: "10s"}, freePorts(t, 1))[0]
		errc := make(chan error, 1)
		go func() {
			_, err := fetch(addr, "/")
			errc <- err
		}()
		time.Sleep(100 * time.Millisecond) // the request is held
		start := time.Now()
		lt.lb.release(webKey)
		if took := time.Since(start); took > time.Second {
			t.Errorf("closing took %v with a request held", took)
		}
		if err := <-errc; err == nil {
			t.Errorf("the held request was answered after its listener closed")
		}
	})
}

// TestInFlightAverage follows the average over made-up times: four
// requests for 1.5 s, then one, read with and without an answered one.
func TestInFlightAverage(t *testing.T) {
	t0 := time.Now()
	var f inFlight
	for _, tc := range []struct {
		ms   int // since t0
		add  int // the change in requests in flight at ms
		own  int // the answered request went in flight at own ms; < 0: none
		want float64
	}{
		{ms: 0, add: 4},
		{ms: 250, own: -1, want: 1},
		{ms: 1000, own: -1, want: 4},
		{ms: 1100, own: -1, want: 4},
		{ms: 1100, own: 0, want: 3},
		{ms: 1450, own: -1, want: 4},
		{ms: 1500, add: -3},
		{ms: 2050, own: -1, want: 0.45*4 + 0.55},
		{ms: 2050, own: 1500, want: 0.45 * 4},
		{ms: 2600, own: -1, want: 1},
		{ms: 60_000, own: -1, want: 1},
		{ms: 60_000, own: 1500, want: 0},
		{ms: 60_030, add: -1},
		{ms: 60_080, own: -1, want: 0.95},
		{ms: 62_000, own: -1, want: 0},
	} {
		now := t0.Add(time.Duration(tc.ms) * time.Millisecond)
		if tc.add != 0 {
			f.add(now, tc.add)
			continue
		}
		var own time.Time
		if tc.own >= 0 {
			own = t0.Add(time.Duration(tc.own) * time.Millisecond)
		}
		if got := f.average(now, own); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("at %dms (own since %dms): average %v, want %v", tc.ms, tc.own, got, tc.want)
		}
	}
}
