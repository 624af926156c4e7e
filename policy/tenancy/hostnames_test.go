package tenancy

import (
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	rule := NewHostnames([]string{"example.com"}, []Reservation{
		{Suffix: "example.com", Namespaces: []string{"ops"}},
		{Suffix: "shop.example.com", Namespaces: []string{"shop"}},
		{Suffix: "open.example.com", Namespaces: []string{"web", "ops"}},
	})
	open := NewHostnames([]string{"example.com."}, nil)
	for _, tc := range []struct {
		name      string
		rule      Hostnames
		namespace string
		host      string
		refused   string // part of the reason; empty when admitted
	}{
		{"hostname in the zone is admitted", open, "web", "shop.example.com", ""},
		{"zone apex is admitted", open, "web", "example.com", ""},
		{"case and trailing dot are ignored", open, "web", "Shop.Example.COM.", ""},
		{"hostname outside the zones is refused", open, "web", "shop.example.org", "outside the federation's zones"},
		{"a name that only ends like the zone is outside it", open, "web", "shopexample.com", "outside"},
		{"wildcard is refused", open, "web", "*.example.com", "wildcard"},
		{"name with an empty label is refused", open, "web", "a..example.com", "not a plain host name"},
		{"longest reservation decides: its namespace is admitted", rule, "shop", "www.shop.example.com", ""},
		{"longest reservation decides: another namespace is refused", rule, "ops", "shop.example.com", "reserved for namespaces shop"},
		{"a shorter reservation admits its namespace elsewhere", rule, "ops", "blog.example.com", ""},
		{"a shorter reservation refuses other namespaces", rule, "web", "blog.example.com", "reserved for namespaces ops"},
		{"a reservation naming several namespaces admits each", rule, "web", "a.open.example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.Check(tc.namespace, tc.host)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("got %v, want a refusal saying %q", err, tc.refused)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rule := NewHostnames([]string{"example.com"}, []Reservation{{Suffix: "team.example.com", Namespaces: []string{"team"}}})
	gw := func(ns, name, host string, age int) Claim {
		return Claim{Hostname: host, Namespace: ns, Kind: "Gateway", Name: name, Created: t0.Add(time.Duration(age) * time.Minute)}
	}
	for _, tc := range []struct {
		name   string
		claims []Claim
		own    Claim
		want   string // part of the reason; empty when it holds
	}{
		{"sole claimant holds its hostname", []Claim{gw("a", "x", "shop.example.com", 0)}, gw("a", "x", "shop.example.com", 0), ""},
		{"first claimant by creation time keeps it", []Claim{gw("b", "x", "shop.example.com", 1), gw("a", "x", "shop.example.com", 2)},
			gw("b", "x", "shop.example.com", 1), ""},
		{"later namespace gets the conflict", []Claim{gw("b", "x", "shop.example.com", 1), gw("a", "x", "shop.example.com", 2)},
			gw("a", "x", "shop.example.com", 2), "held by namespace b (Gateway b/x claimed it first)"},
		{"same creation time: namespace order decides", []Claim{gw("b", "x", "shop.example.com", 0), gw("a", "x", "shop.example.com", 0)},
			gw("b", "x", "shop.example.com", 0), "held by namespace a"},
		{"a second object of the holding namespace is refused too", []Claim{gw("a", "x", "shop.example.com", 0), gw("a", "y", "SHOP.example.com", 1)},
			gw("a", "y", "shop.example.com", 1), "published by Gateway a/x"},
		{"an older claim the rule refuses holds nothing", []Claim{gw("web", "x", "a.team.example.com", 0), gw("team", "y", "a.team.example.com", 1)},
			gw("team", "y", "a.team.example.com", 1), ""},
		{"the refused claim says why", []Claim{gw("web", "x", "a.team.example.com", 0)},
			gw("web", "x", "a.team.example.com", 0), "reserved for namespaces team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := rule.Judge([]Claim{tc.own}, rule.Holders(tc.claims))
			if len(v) != 1 {
				t.Fatalf("got %d verdicts", len(v))
			}
			switch {
			case tc.want == "" && v[0].Reason != "":
				t.Fatalf("refused: %s", v[0].Reason)
			case tc.want != "" && !strings.Contains(v[0].Reason, tc.want):
				t.Fatalf("reason %q, want one saying %q", v[0].Reason, tc.want)
			}
		})
	}
}

func TestParseReservations(t *testing.T) {
	got, err := ParseReservations(" shop.example.com=shop ; Example.com.=web, ops;")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Suffix != "shop.example.com" || got[1].Suffix != "example.com" || strings.Join(got[1].Namespaces, ",") != "web,ops" {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range []string{"example.com", "example.com=", "=web", "example.com=Web", "exa mple.com=web"} {
		if _, err := ParseReservations(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
