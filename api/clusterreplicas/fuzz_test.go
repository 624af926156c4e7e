package clusterreplicas

import (
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary kfed.io/cluster-replicas values to Read, the one
// reader every consumer uses: it never panics, and a table it accepts
// encodes to a value that reads back the same and encodes the same again
// (the writer never causes a write that changes nothing).
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"a":{"planned":3,"ready":2,"reported":true},"b":{"planned":2,"ready":0,"reported":false,"capacity":1,"waiting":1}}`,
		`{}`, `null`, `[]`, `{"a":{"planned":-1,"capacity":null}}`, `{"a":{"planned":2147483648}}`,
		`{"a":{"planned":1},"a":{"ready":1}}`, `{"a":{"Planned":1,"extra":true}}`, `{"a":1}`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		table, ok, err := Read(map[string]string{Annotation: value})
		if !ok {
			t.Fatalf("an annotation that is present reads as absent")
		}
		if err != nil {
			return
		}
		enc := Encode(table)
		back, ok, err := Read(map[string]string{Annotation: enc})
		if !ok || err != nil {
			t.Fatalf("%q encodes as %q, which does not read: %v", value, enc, err)
		}
		if len(table) == 0 && len(back) == 0 {
			return // null and {} are both no clusters
		}
		if !reflect.DeepEqual(back, table) {
			t.Fatalf("%q encodes as %q, which reads as %+v, want %+v", value, enc, back, table)
		}
		if again := Encode(back); again != enc {
			t.Fatalf("encoding is not stable: %q then %q", enc, again)
		}
	})
}
