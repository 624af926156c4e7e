package dnsprovider

import "testing"

func TestRegistryMarkRoundTrips(t *testing.T) {
	reg, err := NewRegistry("fed-1", "")
	if err != nil {
		t.Fatal(err)
	}
	rs := reg.Record("web.example.com", Mark{Owner: "fed-1", Resource: "default/web", Types: []string{"A", "AAAA"}}, 30)
	if rs.Name != "kfed-owner.web.example.com" || rs.Type != TypeTXT {
		t.Fatalf("mark record = %v", rs)
	}
	if want := `"heritage=kfed,kfed/owner=fed-1,kfed/resource=default/web,kfed/types=A;AAAA"`; rs.Targets[0] != want {
		t.Errorf("mark value = %s, want %s", rs.Targets[0], want)
	}
	m, ok := ParseMark(rs)
	if !ok || m.Owner != "fed-1" || m.Resource != "default/web" || !m.Owns("A") || m.Owns("CNAME") {
		t.Errorf("ParseMark = %+v, %v", m, ok)
	}
	if g, ok := reg.GuardedName(rs.Name); !ok || g != "web.example.com" {
		t.Errorf("GuardedName = %q, %v", g, ok)
	}
}

func TestParseMarkRejectsOtherTXT(t *testing.T) {
	for _, v := range []string{
		`"v=spf1 -all"`,
		`"heritage=external-dns,external-dns/owner=default"`,
		`"heritage=kfed"`,
	} {
		if m, ok := ParseMark(RecordSet{Type: TypeTXT, Targets: []string{v}}); ok {
			t.Errorf("ParseMark(%s) = %+v, want not a mark", v, m)
		}
	}
}

func TestMarkWithoutTypesOwnsEveryType(t *testing.T) {
	m, ok := ParseMark(RecordSet{Type: TypeTXT, Targets: []string{`"heritage=kfed,kfed/owner=x"`}})
	if !ok || !m.Owns("CNAME") || !m.Owns("A") {
		t.Errorf("mark without types = %+v, %v; want it to own every type", m, ok)
	}
}

func TestNewRegistryRejectsBadPrefixAndOwner(t *testing.T) {
	for _, c := range []struct{ owner, prefix string }{
		{"fed", "kfed-"},
		{"fed", ".x."},
		{"", "kfed."},
		{"a,b", "kfed."},
	} {
		if _, err := NewRegistry(c.owner, c.prefix); err == nil {
			t.Errorf("NewRegistry(%q, %q) succeeded", c.owner, c.prefix)
		}
	}
}
