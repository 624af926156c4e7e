package controller

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	"google.golang.org/api/option"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/clouddnsfake"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

// secret is one credential the system holds, and the strings that would show
// it leaked: the value and its base64 forms.
type secret struct {
	name  string
	forms []string
}

func newSecret(name, value string) secret {
	b := []byte(value)
	return secret{name: name, forms: []string{value,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}}
}

// pemSecret is a PEM private key: any line of its body gives it away, and so
// does the middle of the base64 of the whole PEM (as a kubeconfig's
// client-key-data or a JSON []byte holds it; its start is the same for
// every key).
func pemSecret(name string, pemBytes []byte) secret {
	block, _ := pem.Decode(pemBytes)
	body := base64.StdEncoding.EncodeToString(block.Bytes)
	whole := base64.StdEncoding.EncodeToString(pemBytes)
	s := newSecret(name, body[64:128])
	s.forms = append(s.forms, whole[120:200], strings.ReplaceAll(string(pemBytes[40:140]), "\n", `\n`))
	return s
}

// jwtSecret is a bearer token: the whole token, and its signature alone.
func jwtSecret(name, token string) secret {
	s := newSecret(name, token)
	if i := strings.LastIndexByte(token, '.'); i > 0 {
		s.forms = append(s.forms, token[i+1:])
	}
	return s
}

// leaks lists the secrets whose forms appear in text, with where.
func leaks(secrets []secret, where, text string) []string {
	var out []string
	for _, s := range secrets {
		for _, f := range s.forms {
			if f != "" && strings.Contains(text, f) {
				i := strings.Index(text, f)
				out = append(out, fmt.Sprintf("%s: %s, near %q", where, s.name, text[max(0, i-80):i]))
				break
			}
		}
	}
	return out
}

func randomString(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// TestNoSecretReachesLogsEventsMetricsOrObjects runs the system with real
// credentials set — a TSIG key for BIND, AWS keys for Route53, a Google
// service account and its access token for Cloud DNS, bearer tokens and a
// client key for the members in kfed-system Secrets, and the tokens of the
// controller, CoreDNS and the health checker — through churn, and greps
// every log, Event, metrics scrape and object (Secrets' data aside) of every
// cluster for any of them, during the churn and after it.
func TestNoSecretReachesLogsEventsMetricsOrObjects(t *testing.T) {
	const zone = "kfed.test"
	ctx := context.Background()
	bind := bindtest.Start(t, zone)
	tsig, err := os.ReadFile(bind.SecretFile)
	if err != nil {
		t.Fatal(err)
	}
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer())
	fed := f.Client("federation")

	// The controller's kubeconfig: its own token for the control plane,
	// each member's kfed-member token. cluster-2 is joined with the admin
	// client certificate and key instead, so both kinds of member
	// credentials sit in kfed-system Secrets.
	kubeconfig := leastPrivilegeKubeconfig(t, f)
	least, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	joinWith := map[string]*clientcmdapi.Config{"cluster-1": least, "cluster-2": admin}
	for _, m := range f.Members {
		if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: joinWith[m.Name]}); err != nil {
			t.Fatal(err)
		}
	}
	corednsKC := fedtest.CoreDNSKubeconfig(t, f, "cluster-1")
	checkerKC := fedtest.AgentKubeconfig(t, f, "cluster-1", identity.HealthCheck)

	awsKey, awsSecret, awsSession := "AKIA"+strings.ToUpper(randomString(t, 16)), randomString(t, 40), randomString(t, 64)
	gcpToken := "ya29." + randomString(t, 80)
	saKey, saJSON := googleServiceAccount(t, "http://unused.invalid/token")
	secrets := []secret{
		newSecret("TSIG secret", strings.TrimSpace(string(tsig))),
		newSecret("AWS secret access key", awsSecret),
		newSecret("AWS session token", awsSession),
		newSecret("AWS access key ID", awsKey),
		newSecret("Google access token", gcpToken),
		pemSecret("Google service account private key", saKey),
		jwtSecret("controller's token", least.AuthInfos["federation"].Token),
		jwtSecret("cluster-1's kfed-member token (in a Secret)", least.AuthInfos["cluster-1"].Token),
		pemSecret("cluster-2's client key (in a Secret)", admin.AuthInfos["cluster-2"].ClientKeyData),
		jwtSecret("CoreDNS's token", tokenOf(t, corednsKC)),
		jwtSecret("health checker's token", tokenOf(t, checkerKC)),
	}
	var saDoc map[string]any
	if err := json.Unmarshal(saJSON, &saDoc); err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, newSecret("Google private key ID", saDoc["private_key_id"].(string)))

	// kfed-controller, with the generated roles, publishing to BIND with TSIG.
	bin := framework.BuildCommand(t, "kfed-controller")
	host, port, _ := net.SplitHostPort(bind.Addr)
	metricsAddr, healthAddr := framework.FreeAddr(t), framework.FreeAddr(t)
	ctrl := exec.Command(bin, "--kubeconfig", kubeconfig, "--context", "federation", "-v", "4",
		"--federation", "fed", "--domain", zone, "--cluster-probe-interval", "500ms",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", healthAddr,
		"--dns-provider", "rfc2136", "--rfc2136-host", host, "--rfc2136-port", port, "--rfc2136-zone", zone,
		"--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", bind.SecretFile,
		"--dns-interval", "2s", "--owner-id", "fed")
	_, ctrlLog := framework.StartProcess(t, ctrl, "kfed-controller")

	// CoreDNS with the plugin, read-only on DNSEndpoints, with its metrics.
	promAddr := framework.FreeAddr(t)
	coredns, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-secrets", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "fed", Cluster: "cluster-1",
			Kubeconfig: corednsKC, Context: "federation", Extra: []string{"log", "prometheus " + promAddr}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coredns.Stop)

	checker, err := f.StartChecker(ctx, devenv.CheckerOptions{
		Binary: fedtest.BuildHealthcheck(t), Name: "checker-secrets", Cluster: "cluster-1", Federation: "fed",
		Kubeconfig: checkerKC, Context: "federation", Args: []string{"--interval=1s", "--timeout=500ms", "-v=4"},
	})
	if err != nil {
		t.Fatal(err)
	}

	// `kfed dns sync` to the Route53 endpoint with AWS keys in its
	// environment, every second.
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	r53Zone := r53.AddZone(zone+".", false)
	var r53Auth atomic.Int64
	r53Front := authCounting(t, r53.URL, "AWS4-HMAC-SHA256 Credential="+awsKey+"/", &r53Auth)
	kfedBin := framework.BuildCommand(t, "kfed")
	dnsSync := exec.Command(kfedBin, "dns", "sync", "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--provider", "route53", "--route53-endpoint", r53Front, "--owner-id", "fed", "--interval", "1s")
	dnsSync.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+awsKey, "AWS_SECRET_ACCESS_KEY="+awsSecret,
		"AWS_SESSION_TOKEN="+awsSession, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	_, syncLog := framework.StartProcess(t, dnsSync, "kfed dns sync")

	// Cloud DNS through the Google client with application default
	// credentials: a service account whose token endpoint is local and
	// hands out gcpToken, which the endpoint in front of the fake requires.
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, gcpToken)
	}))
	t.Cleanup(tokens.Close)
	_, saJSON = googleServiceAccountWithKey(t, saKey, saDoc["private_key_id"].(string), tokens.URL+"/token")
	saFile := filepath.Join(t.TempDir(), "google.json")
	if err := os.WriteFile(saFile, saJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", saFile)
	gcp := clouddnsfake.New()
	t.Cleanup(gcp.Close)
	gcp.AddZone("kfed-test", "kfed-test", zone+".")
	var gcpAuth atomic.Int64
	gcpFront := authCounting(t, gcp.URL, "Bearer "+gcpToken, &gcpAuth)
	gprov, err := clouddns.NewWithDefaultCredentials(ctx, clouddns.Config{Project: "kfed-test", Zones: []string{"kfed-test"}},
		option.WithEndpoint(gcpFront+"/"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := dnsprovider.NewRegistry("fed", "")
	if err != nil {
		t.Fatal(err)
	}
	gsync := &dnssync.Syncer{Provider: gprov, Planner: dnsprovider.Planner{Registry: reg}}
	gcpLog := &process.Output{}
	syncGoogle := func() {
		var eps extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &eps); err != nil {
			t.Fatal(err)
		}
		res, err := gsync.Sync(ctx, dnssync.Desired(tenancy.NewEndpoints("fed", nil), eps.Items), false)
		fmt.Fprintf(gcpLog, "clouddns sync: %+v, %d changes, err %v\n", res, res.Changes(), err)
	}

	// Every place a secret could surface, gathered and searched.
	check := func(when string) {
		t.Helper()
		var found []string
		texts := map[string]string{
			"kfed-controller log":    ctrlLog.String(),
			"kfed dns sync log":      syncLog.String(),
			"Cloud DNS sync results": gcpLog.String(),
		}
		for _, name := range []string{"coredns-secrets", "checker-secrets"} {
			b, err := os.ReadFile(filepath.Join(f.Dir, "logs", name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			texts[name+" log"] = string(b)
		}
		for name, addr := range map[string]string{"kfed-controller": metricsAddr, "CoreDNS": promAddr, "health checker": checker.MetricsAddr} {
			body, err := fedtest.Get(ctx, "http://"+addr+"/metrics")
			if err != nil {
				t.Fatalf("scraping %s: %v", name, err)
			}
			texts[name+" metrics"] = body
		}
		for _, c := range []string{"federation", "cluster-1", "cluster-2"} {
			for what, text := range clusterObjects(t, f, c) {
				texts[c+" "+what] = text
			}
		}
		for where, text := range texts {
			found = append(found, leaks(secrets, where, text)...)
		}
		for _, l := range found {
			t.Errorf("%s: a secret leaked: %s", when, l)
		}
		t.Logf("%s: searched %d logs, scrapes and object listings for %d secrets", when, len(texts), len(secrets))
	}

	// Churn: create, update, re-place and delete Services while every
	// publisher runs.
	var names []string
	for i := range 8 {
		svc := fedtest.FederatedService("default", fmt.Sprintf("sec-%d", i))
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		names = append(names, svc.Name)
	}
	for _, name := range names {
		fedtest.WantServiceCondition(t, fed, client.ObjectKey{Namespace: "default", Name: name}, kfedv1alpha1.ConditionPublished, "True", "cluster-1, cluster-2")
	}
	syncGoogle()
	patch := func(name, p string) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if err := fed.Patch(ctx, svc, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
			t.Fatal(err)
		}
	}
	patch("sec-0", `{"metadata":{"annotations":{"kfed.io/ttl":"41"}}}`)
	patch("sec-1", `{"metadata":{"annotations":{"kfed.io/clusters":"cluster-2"}}}`)
	patch("sec-2", `{"metadata":{"annotations":{"kfed.io/ttl":"not-a-number"}}}`) // a Warning Event
	for _, name := range []string{"sec-6", "sec-7"} {
		if err := fed.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	syncGoogle()
	check("during churn")

	// It all settles: BIND has the new TTL, CoreDNS (read-only RBAC) keeps
	// answering and follows the change, Route53 and Cloud DNS were called
	// with the credentials.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantTTL(bind.Addr, "sec-0.default.fed.svc."+zone+".", 41)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantTTL(coredns.Addr, "sec-0.default.fed.svc."+zone+".", 41)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		if err := fedtest.WantAddresses(coredns.Addr, "udp", "sec-1.default.fed.svc."+zone+".", dns.TypeA, lbAddr(t, f, "cluster-2", "sec-1")); err != nil {
			return err
		}
		r, err := fedtest.Query(coredns.Addr, "udp", "sec-7.default.fed.svc."+zone+".", dns.TypeA)
		if err != nil {
			return err
		}
		if r.Rcode != dns.RcodeNameError {
			return fmt.Errorf("sec-7 (deleted) answers %s", dns.RcodeToString[r.Rcode])
		}
		return nil
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		for _, rs := range r53.RecordSets(r53Zone) {
			if strings.HasPrefix(rs.Name, "sec-0.default.fed.svc.") && rs.Type == "A" && rs.TTL != nil && *rs.TTL == 41 {
				return nil
			}
		}
		return fmt.Errorf("Route53 lacks sec-0 with TTL 41; dns sync log:\n%s", syncLog.String())
	})
	syncGoogle()
	if r53Auth.Load() == 0 || gcpAuth.Load() == 0 {
		t.Errorf("providers saw %d Route53 requests signed with the access key and %d Cloud DNS requests with the token",
			r53Auth.Load(), gcpAuth.Load())
	}
	check("after churn")
	corednsLog, _ := os.ReadFile(filepath.Join(f.Dir, "logs", "coredns-secrets.log"))
	for who, text := range map[string]string{
		"kfed-controller with the generated roles": ctrlLog.String(),
		"CoreDNS as cluster-1's kfed-coredns":      string(corednsLog),
	} {
		if refused := linesWith(text, "forbidden"); refused != "" {
			t.Errorf("%s was refused something:\n%s", who, refused)
		}
	}
}

// TestMemberIdentitiesMayDoOnlyTheirJob checks what the roles kfed join
// binds a member's agents to (deploy/identities/roles.yaml) let them do, as
// the API server answers each identity's SelfSubjectRulesReview: beyond
// what every authenticated user may (a ServiceAccount bound to nothing),
// cluster-1's CoreDNS reads DNSEndpoints everywhere and HealthReports in
// its member namespace alone; its checker reads DNSEndpoints, Clusters and
// HealthReports everywhere and writes HealthReports and Leases in its
// member namespace alone — not in kfed's namespace, where kfed-controller's
// leader-election Lease is, nor in cluster-2's. Neither may touch a Secret.
func TestMemberIdentitiesMayDoOnlyTheirJob(t *testing.T) {
	f := framework.Start(t, framework.Members(2))
	ctx := context.Background()
	nobody := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "nobody"}}
	if err := f.Client("federation").Create(ctx, framework.Namespace("kfed-system")); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := f.Client("federation").Create(ctx, nobody); err != nil {
		t.Fatal(err)
	}
	nobodyKC := fedtest.ServiceAccountKubeconfig(t, f, "nobody")
	fedtest.AgentKubeconfig(t, f, "cluster-2", identity.HealthCheck) // cluster-2's namespace exists
	const (
		readEndpoints = "[externaldns.k8s.io] [dnsendpoints] [] [get list watch]"
		readKfed      = "[kfed.io] [clusters healthreports] [] [get list watch]"
		readReports   = "[kfed.io] [healthreports] [] [get list watch]"
		writeReports  = "[kfed.io] [healthreports] [] [get list watch create update patch delete]"
		writeLeases   = "[coordination.k8s.io] [leases] [] [get list watch create update patch delete]"
	)
	own, other := kfedv1alpha1.MemberNamespace("cluster-1"), kfedv1alpha1.MemberNamespace("cluster-2")
	for _, tc := range []struct {
		component identity.Component
		want      map[string][]string // namespace → every rule beyond nobody's
	}{
		{identity.CoreDNS, map[string][]string{
			"default": {readEndpoints}, "kfed-system": {readEndpoints}, other: {readEndpoints},
			own: {readEndpoints, readReports},
		}},
		{identity.HealthCheck, map[string][]string{
			"default": {readEndpoints, readKfed}, "kfed-system": {readEndpoints, readKfed}, other: {readEndpoints, readKfed},
			own: {readEndpoints, readKfed, writeReports, writeLeases},
		}},
	} {
		t.Run(string(tc.component), func(t *testing.T) {
			kc := fedtest.AgentKubeconfig(t, f, "cluster-1", tc.component)
			for ns, want := range tc.want {
				baseline := map[string]bool{}
				for _, r := range resourceRules(t, nobodyKC, ns) {
					baseline[r] = true
				}
				var got []string
				for _, r := range resourceRules(t, kc, ns) {
					if !baseline[r] {
						got = append(got, r)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
					t.Errorf("in %s, cluster-1's %s may\n  %s\nwant\n  %s", ns, tc.component, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			}
		})
	}
}

// resourceRules asks the API server what the kubeconfig's identity may do in
// namespace ns, one "groups resources names verbs" string a rule.
func resourceRules(t *testing.T, kubeconfig, ns string) []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, r := range review.Status.ResourceRules {
		rules = append(rules, fmt.Sprintf("%v %v %v %v", r.APIGroups, r.Resources, r.ResourceNames, r.Verbs))
	}
	return rules
}

func mustLoad(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	c, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tokenOf is the bearer token of the kubeconfig's current context, held or
// in its token file.
func tokenOf(t *testing.T, path string) string {
	t.Helper()
	c := mustLoad(t, path)
	auth := c.AuthInfos[c.Contexts[c.CurrentContext].AuthInfo]
	if auth.TokenFile == "" {
		return auth.Token
	}
	b, err := os.ReadFile(auth.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// googleServiceAccount makes a service account key file with a fresh RSA key.
func googleServiceAccount(t *testing.T, tokenURI string) (keyPEM, file []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return googleServiceAccountWithKey(t, keyPEM, randomString(t, 40), tokenURI)
}

func googleServiceAccountWithKey(t *testing.T, keyPEM []byte, keyID, tokenURI string) ([]byte, []byte) {
	t.Helper()
	file, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "kfed-test", "private_key_id": keyID,
		"private_key": string(keyPEM), "client_email": "kfed@kfed-test.iam.gserviceaccount.com",
		"client_id": "1234567890", "token_uri": tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return keyPEM, file
}

// authCounting puts a proxy in front of target that counts requests whose
// Authorization header starts with prefix, so the test knows the
// credentials were in use.
func authCounting(t *testing.T, target, prefix string, n *atomic.Int64) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), prefix) {
			n.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lbAddr is the load-balancer address of Service default/name in cluster.
func lbAddr(t *testing.T, f *framework.Federation, cluster, name string) string {
	t.Helper()
	var svc corev1.Service
	if err := f.Client(cluster).Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("%s/%s has no ingress", cluster, name)
	}
	return svc.Status.LoadBalancer.Ingress[0].IP
}

// clusterObjects lists every object of every listable resource in a
// cluster, as JSON by resource: all Events, and of Secrets only their
// metadata (their data is where credentials belong).
func clusterObjects(t *testing.T, f *framework.Federation, cluster string) map[string]string {
	t.Helper()
	cfg := rest.CopyConfig(f.Cluster(cluster).Config)
	dc := kubernetes.NewForConfigOrDie(cfg).Discovery()
	dyn := dynamic.NewForConfigOrDie(cfg)
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") {
				continue
			}
			objs, err := dyn.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s in %s: %v", r.Name, cluster, err)
			}
			if r.Name == "secrets" {
				for i := range objs.Items {
					objs.Items[i] = unstructured.Unstructured{Object: map[string]any{"metadata": objs.Items[i].Object["metadata"]}}
				}
			}
			b, err := json.Marshal(objs)
			if err != nil {
				t.Fatal(err)
			}
			out[r.Name+"."+l.GroupVersion] = string(b)
		}
	}
	return out
}

// linesWith returns the lines of text holding word, in any case.
func linesWith(text, word string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(strings.ToLower(line), word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSecretSearchFindsEveryForm checks the search itself: each way a
// credential could be written out is found, and unrelated text is not.
func TestSecretSearchFindsEveryForm(t *testing.T) {
	keyPEM, _ := googleServiceAccount(t, "http://127.0.0.1/token")
	token := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1oZXJl"
	jsonPEM, _ := json.Marshal(string(keyPEM))
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{AuthInfos: map[string]*clientcmdapi.AuthInfo{"m": {ClientKeyData: keyPEM}}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []secret{newSecret("tsig", "c2VjcmV0LXRzaWcta2V5LWJ5dGVz"), pemSecret("key", keyPEM), jwtSecret("token", token)}
	tests := []struct {
		name, text string
		want       int
	}{
		{"nothing secret", `level=info msg="published 3 records" token=<masked>`, 0},
		{"a value as it is", "tsig secret c2VjcmV0LXRzaWcta2V5LWJ5dGVz in a message", 1},
		{"a value base64-encoded", "data: " + base64.StdEncoding.EncodeToString([]byte("c2VjcmV0LXRzaWcta2V5LWJ5dGVz")), 1},
		{"a PEM key as it is", "key:\n" + string(keyPEM), 1},
		{"a PEM key in JSON", `{"private_key":` + string(jsonPEM) + `}`, 1},
		{"a PEM key in a kubeconfig", string(kubeconfig), 1},
		{"a bearer token", "Authorization: Bearer " + token, 1},
		{"a token's signature alone", "sig=" + token[strings.LastIndexByte(token, '.')+1:], 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaks(secrets, "text", tt.text); len(got) != tt.want {
				t.Errorf("found %d secrets (%v), want %d", len(got), got, tt.want)
			}
		})
	}
}
