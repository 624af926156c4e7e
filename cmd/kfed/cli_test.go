package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cliRow is one command line a user may type without a working federation,
// and what kfed must tell them: every string of want in the error (or, for
// a row that succeeds, in the output), and of stderr in what it writes
// there. In args and the wants, $SERVER is the control plane nobody
// listens on and $KUBECONFIG the kubeconfig that names it.
type cliRow struct {
	name string
	args []string
	// bed is "offline": no kubeconfig anywhere ($KUBECONFIG names a file
	// that does not exist, $HOME has none); or "unreachable": $KUBECONFIG
	// has the contexts federation (current), cluster-1 and cluster-2, all
	// at $SERVER, a loopback port with nothing listening.
	bed    string
	ok     bool
	want   []string
	stderr []string
}

// cliRows are the table of TestCLIErrorsSayWhatWasWrongAndHowToFixIt,
// grouped by command. A new command adds its rows here:
// TestEveryCommandHasAnExampleAndRows fails until it has some.
func cliRows() []cliRow {
	unreachable := []string{"$SERVER", `context "federation"`, "does not answer", "kubectl --context federation get --raw /readyz"}
	noKubeconfig := []string{"no kubeconfig", "give --kubeconfig FILE or set KUBECONFIG"}
	return []cliRow{
		// kfed
		{name: "unknown flag says where to read", args: []string{"--bogus"}, bed: "offline",
			want: []string{"unknown flag: --bogus", "see kfed --help"}},
		{name: "-v is not --version", args: []string{"-v"}, bed: "offline",
			want: []string{"unknown shorthand flag: 'v'"}},
		{name: "--version", args: []string{"--version"}, bed: "offline", ok: true, want: []string{"kfed "}},

		// kfed version
		{name: "version -o yaml", args: []string{"version", "-o", "yaml"}, bed: "offline", ok: true, want: []string{"version:", "goVersion:"}},
		{name: "version with an unknown output", args: []string{"version", "-o", "toml"}, bed: "offline",
			want: []string{`--output "toml"`, "want text, json, yaml"}},
		{name: "version takes no argument", args: []string{"version", "now"}, bed: "offline",
			want: []string{"kfed version takes no arguments", `["now"]`}},

		// kfed plan
		{name: "plan with nothing on stdin", args: []string{"plan"}, bed: "offline",
			want: []string{"reading the request on stdin"}},
		{name: "plan takes no argument", args: []string{"plan", "request.json"}, bed: "offline",
			want: []string{"kfed plan takes no arguments", "request.json"}},

		// kfed dev and kfed dev up
		{name: "dev up with too many members", args: []string{"dev", "up", "--members", "31"}, bed: "offline",
			want: []string{"--members 31: want 1 to 30"}},
		{name: "dev up with a bad flag value", args: []string{"dev", "up", "--members", "three"}, bed: "offline",
			want: []string{`invalid argument "three" for "--members"`, "see kfed dev up --help"}},
		{name: "dev credential without a kubeconfig", args: []string{"dev", "credential"}, bed: "offline", want: noKubeconfig},
		{name: "dev --help", args: []string{"dev", "--help"}, bed: "offline", ok: true, want: []string{"kfed dev up"}},
		{name: "dev with an unknown command", args: []string{"dev", "down"}, bed: "offline",
			want: []string{`unknown command "down" for "kfed dev"`}},

		// kfed join
		{name: "join without NAME", args: []string{"join"}, bed: "offline",
			want: []string{"missing NAME", "kfed join NAME", "see kfed join --help"}},
		{name: "join without a kubeconfig", args: []string{"join", "cluster-1"}, bed: "offline", want: noKubeconfig},
		{name: "join with an unreachable federation", args: []string{"join", "cluster-1", "--member-context", "cluster-1"}, bed: "unreachable", want: unreachable},
		{name: "join with a federation context not in the kubeconfig", args: []string{"join", "cluster-1", "--context", "fed"}, bed: "unreachable",
			want: []string{`federation context "fed" is not in the kubeconfig $KUBECONFIG`, "[cluster-1 cluster-2 federation]", "give --context"}},
		{name: "join as written before --member-context still reads --context as the member's", bed: "unreachable",
			args:   []string{"join", "cluster-1", "--context", "cluster-1", "--federation-context", "federation"},
			want:   unreachable,
			stderr: []string{"--federation-context has been deprecated", "write --member-context cluster-1 --context federation"}},
		{name: "join with two federation contexts", args: []string{"join", "cluster-1", "--context", "a", "--member-context", "b", "--federation-context", "c"}, bed: "unreachable",
			want: []string{"--federation-context c and --context a both name the federation's context"}},
		{name: "join with a bad --location, before reading anything", args: []string{"join", "cluster-1", "--location", "north"}, bed: "unreachable",
			want: []string{"join cluster-1: --location"}},

		// kfed unjoin
		{name: "unjoin without NAME", args: []string{"unjoin"}, bed: "offline",
			want: []string{"missing NAME", "kfed unjoin NAME", "see kfed unjoin --help"}},
		{name: "unjoin of two clusters", args: []string{"unjoin", "cluster-1", "cluster-2"}, bed: "offline",
			want: []string{"kfed unjoin takes only NAME", `["cluster-1" "cluster-2"]`}},
		{name: "unjoin with an unreachable federation", args: []string{"unjoin", "cluster-1"}, bed: "unreachable", want: unreachable},
		{name: "unjoin's help warns that it deletes the copies", args: []string{"unjoin", "--help"}, bed: "offline", ok: true,
			want: []string{"deletes, in the member, every", "copy", "kfed join NAME --renew", "kfed drain NAME"}},

		// kfed agent-kubeconfig
		{name: "agent-kubeconfig without CLUSTER", args: []string{"agent-kubeconfig", "--component", "healthcheck"}, bed: "offline",
			want: []string{"missing CLUSTER", "kfed agent-kubeconfig CLUSTER"}},
		{name: "agent-kubeconfig with an unknown component, before reading anything", args: []string{"agent-kubeconfig", "cluster-1", "--component", "kubelet"},
			bed: "unreachable", want: []string{`component "kubelet": want healthcheck or coredns`}},
		{name: "agent-kubeconfig without --component", args: []string{"agent-kubeconfig", "cluster-1"}, bed: "offline",
			want: []string{`required flag(s) "component" not set`}},
		{name: "agent-kubeconfig with an unreachable federation", args: []string{"agent-kubeconfig", "cluster-1", "--component", "healthcheck"},
			bed: "unreachable", want: unreachable},

		// kfed status
		{name: "status without a kubeconfig", args: []string{"status"}, bed: "offline", want: noKubeconfig},
		{name: "status with an unreachable federation", args: []string{"status"}, bed: "unreachable", want: unreachable},
		{name: "status with a context not in the kubeconfig", args: []string{"status", "--context", "nope"}, bed: "unreachable",
			want: []string{`federation context "nope" is not in the kubeconfig`, "[cluster-1 cluster-2 federation]"}},
		{name: "status with an unknown output", args: []string{"status", "-o", "toml"}, bed: "unreachable",
			want: []string{`--output "toml"`, "want table, wide, json, yaml"}},
		{name: "status -A with -n", args: []string{"status", "-A", "-n", "shop"}, bed: "unreachable",
			want: []string{"-A shows every namespace: give it without -n and SERVICE"}},
		{name: "status --watch -o json", args: []string{"status", "--watch", "-o", "json"}, bed: "unreachable",
			want: []string{"--watch draws the table: give it without -o json"}},
		{name: "status of two Services", args: []string{"status", "a", "b"}, bed: "offline",
			want: []string{"kfed status takes only SERVICE", "kfed status [SERVICE]"}},
		{name: "status --color rainbow", args: []string{"status", "--color", "rainbow"}, bed: "unreachable",
			want: []string{"--color must be auto, always or never"}},

		// kfed dns, kfed dns plan and kfed dns sync
		{name: "dns --help", args: []string{"dns", "--help"}, bed: "offline", ok: true, want: []string{"plan", "sync"}},
		{name: "dns with an unknown command", args: []string{"dns", "publish"}, bed: "offline",
			want: []string{`unknown command "publish" for "kfed dns"`}},
		{name: "dns plan refuses an unknown provider before reading anything", args: []string{"dns", "plan", "--provider", "foo"}, bed: "unreachable",
			want: []string{`unknown provider "foo"`, "--provider route53, clouddns or rfc2136"}},
		{name: "dns plan rfc2136 without its zone", args: []string{"dns", "plan", "--provider", "rfc2136", "--rfc2136-host", "127.0.0.1"}, bed: "unreachable",
			want: []string{"provider rfc2136 needs --rfc2136-host and --rfc2136-zone"}},
		{name: "dns plan with an unknown output", args: []string{"dns", "plan", "-o", "toml"}, bed: "unreachable",
			want: []string{`--output "toml"`, "want table, wide, json, yaml"}},
		{name: "dns plan SERVICE -A", args: []string{"dns", "plan", "demo", "-A"}, bed: "unreachable",
			want: []string{"give SERVICE with -n NAMESPACE, or -A without SERVICE"}},
		{name: "dns plan with an unreachable federation", args: []string{"dns", "plan", "demo"}, bed: "unreachable", want: unreachable},
		{name: "dns plan without a kubeconfig", args: []string{"dns", "plan"}, bed: "offline", want: noKubeconfig},
		{name: "dns sync without a provider", args: []string{"dns", "sync", "--once"}, bed: "unreachable",
			want: []string{"no provider given: --provider route53, clouddns or rfc2136"}},
		{name: "dns sync with an unreachable federation", bed: "unreachable",
			args: []string{"dns", "sync", "--once", "--provider", "rfc2136", "--rfc2136-host", "127.0.0.1", "--rfc2136-zone", "example.com"},
			want: unreachable},
		{name: "dns sync with a bad --interval", args: []string{"dns", "sync", "--interval", "often"}, bed: "offline",
			want: []string{`invalid argument "often" for "--interval"`, "see kfed dns sync --help"}},

		// kfed failover
		{name: "failover without SERVICE", args: []string{"failover", "--auto"}, bed: "offline",
			want: []string{"missing SERVICE", "kfed failover SERVICE", "see kfed failover --help"}},
		{name: "failover without --to or --auto", args: []string{"failover", "web"}, bed: "offline",
			want: []string{"give exactly one of --to PLACE and --auto"}},
		{name: "failover with an unreachable federation", args: []string{"failover", "web", "-n", "shop", "--auto"}, bed: "unreachable", want: unreachable},

		// kfed check
		{name: "check with an unknown output", args: []string{"check", "-o", "toml"}, bed: "offline",
			want: []string{`--output "toml"`, "want table, wide, json, yaml"}},
		{name: "check with a bad --dns", args: []string{"check", "--dns", "cluster-1"}, bed: "offline",
			want: []string{`--dns "cluster-1": want CLUSTER=ADDR`}},
		{name: "check with an unreachable federation", args: []string{"check"}, bed: "unreachable",
			want: []string{"1 of 1 checks failed", "$SERVER", `(context "federation") does not answer`, "kubectl --context federation get --raw /readyz"}},
		{name: "check without a kubeconfig", args: []string{"check", "-o", "yaml"}, bed: "offline",
			want: []string{"1 of 1 checks failed", "no kubeconfig", "give --kubeconfig FILE or set KUBECONFIG"}},

		// kfed drain and kfed undrain
		{name: "drain without CLUSTER", args: []string{"drain", "--wait"}, bed: "offline",
			want: []string{"missing CLUSTER", "kfed drain CLUSTER", "see kfed drain --help"}},
		{name: "undrain of two clusters", args: []string{"undrain", "cluster-1", "cluster-2"}, bed: "offline",
			want: []string{"kfed undrain takes only CLUSTER", `["cluster-1" "cluster-2"]`}},
		{name: "drain with a bad --timeout", args: []string{"drain", "cluster-1", "--timeout", "soon"}, bed: "offline",
			want: []string{`invalid argument "soon" for "--timeout"`, "see kfed drain --help"}},
		{name: "drain with an unreachable federation", args: []string{"drain", "cluster-1"}, bed: "unreachable", want: unreachable},
		{name: "undrain without a kubeconfig", args: []string{"undrain", "cluster-1"}, bed: "offline", want: noKubeconfig},

		// kfed explain
		{name: "explain without NAME", args: []string{"explain", "--from", "cluster-1"}, bed: "offline",
			want: []string{"missing NAME", "kfed explain NAME", "see kfed explain --help"}},
		{name: "explain with an unknown type, before reading anything", args: []string{"explain", "demo.default.dev.svc.kfed.test", "--type", "MX"}, bed: "unreachable",
			want: []string{`--type must be A, AAAA or SRV, not "MX"`}},
		{name: "explain from a member and a subnet", args: []string{"explain", "demo.default.dev.svc.kfed.test", "--from", "cluster-1", "--client-subnet", "203.0.113.0/24"}, bed: "offline",
			want: []string{"give --from CLUSTER", "or --client-subnet CIDR", "not both"}},
		{name: "explain a subnet without GeoIP", args: []string{"explain", "demo.default.dev.svc.kfed.test", "--client-subnet", "203.0.113.0/24", "--geoip", ""}, bed: "offline",
			want: []string{"--client-subnet needs the edge CoreDNS's GeoIP2 City database", "give --geoip FILE or set KFED_GEOIP"}},
		{name: "explain with an unreachable federation", args: []string{"explain", "demo.default.dev.svc.kfed.test", "--from", "cluster-1"}, bed: "unreachable", want: unreachable},

		// kfed completion
		{name: "completion bash", args: []string{"completion", "bash"}, bed: "offline", ok: true, want: []string{"bash completion", "__start_kfed"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, bed: "offline", ok: true, want: []string{"#compdef kfed"}},
		{name: "completion fish", args: []string{"completion", "fish"}, bed: "offline", ok: true, want: []string{"complete -c kfed"}},
		{name: "completion without a shell", args: []string{"completion"}, bed: "offline",
			want: []string{"missing SHELL", "kfed completion bash|zsh|fish|powershell"}},
		{name: "completion for an unknown shell", args: []string{"completion", "tcsh"}, bed: "offline",
			want: []string{`unknown shell "tcsh": want bash, zsh, fish or powershell`}},
	}
}

// deadServer returns an https URL on loopback where nothing listens: a
// port the kernel just gave out and took back.
func deadServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "https://" + addr
}

// unreachableKubeconfig writes a kubeconfig whose contexts federation
// (current), cluster-1 and cluster-2 all name server.
func unreachableKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: federation\nclusters:\n- name: dead\n  cluster: {server: \"" + server + "\", insecure-skip-tls-verify: true}\n")
	b.WriteString("users:\n- name: u\n  user: {token: t}\ncontexts:\n")
	for _, c := range []string{"federation", "cluster-1", "cluster-2"} {
		b.WriteString("- name: " + c + "\n  context: {cluster: dead, user: u}\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCLIErrorsSayWhatWasWrongAndHowToFixIt(t *testing.T) {
	server := deadServer(t)
	kc := unreachableKubeconfig(t, server)
	expand := func(s string) string {
		return strings.NewReplacer("$SERVER", server, "$KUBECONFIG", kc).Replace(s)
	}
	for _, tt := range cliRows() {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			switch tt.bed {
			case "offline":
				t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
				// Not in a pod either, where client-go would use the
				// pod's ServiceAccount.
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
				t.Setenv("KUBERNETES_SERVICE_PORT", "")
			case "unreachable":
				t.Setenv("KUBECONFIG", kc)
			default:
				t.Fatalf("bed %q", tt.bed)
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = expand(a)
			}
			var stdout, stderr bytes.Buffer
			cmd := newRootCommand()
			cmd.SetArgs(args)
			cmd.SetIn(strings.NewReader(""))
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			err := cmd.ExecuteContext(context.Background())
			got := stdout.String()
			switch {
			case tt.ok && err != nil:
				t.Fatalf("kfed %s: %v\n%s%s", strings.Join(args, " "), err, got, stderr.String())
			case !tt.ok && err == nil:
				t.Fatalf("kfed %s succeeded, want an error with %q:\n%s", strings.Join(args, " "), tt.want, got)
			case !tt.ok:
				got = err.Error() + "\n" + got
			}
			for _, w := range tt.want {
				if !strings.Contains(got, expand(w)) {
					t.Errorf("kfed %s says\n%s\nwithout %q", strings.Join(args, " "), got, expand(w))
				}
			}
			// cobra writes the flags' deprecation messages to Out when
			// it is set, as here, else to stderr.
			notes := stderr.String() + stdout.String()
			for _, w := range tt.stderr {
				if !strings.Contains(notes, expand(w)) {
					t.Errorf("kfed %s writes on stderr\n%s\nwithout %q", strings.Join(args, " "), notes, expand(w))
				}
			}
		})
	}
}

// TestEveryCommandHasAnExampleAndRows: every command's help shows an
// example, and every command has rows in cliRows.
func TestEveryCommandHasAnExampleAndRows(t *testing.T) {
	tested := map[string]bool{}
	root := newRootCommand()
	for _, r := range cliRows() {
		// The command a row runs is the longest prefix of its arguments
		// that names one.
		c, _, err := root.Find(r.args)
		if err == nil {
			tested[c.CommandPath()] = true
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return // cobra's own
		}
		if c.Example == "" {
			t.Errorf("%s --help has no Example", c.CommandPath())
		}
		if !tested[c.CommandPath()] {
			t.Errorf("%s has no row in cliRows", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
