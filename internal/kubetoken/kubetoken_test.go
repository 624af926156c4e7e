package kubetoken

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// TestARefusedTokenIsReadAgainFromItsFile: the server accepts only the
// token in the file now; after the file changes, the first request with
// the old token is refused and the next one carries the new token.
func TestARefusedTokenIsReadAgainFromItsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(file, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old")
	var mu sync.Mutex
	valid := "old"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+valid {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		reread  bool
		wantNew int // the status of the second request after the renewal
	}{
		{"client-go alone keeps the old token for a minute", false, http.StatusUnauthorized},
		{"with Reread the second request carries the new token", true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("old")
			mu.Lock()
			valid = "old"
			mu.Unlock()
			cfg := &rest.Config{Host: srv.URL, BearerTokenFile: file}
			if tc.reread {
				Reread(cfg)
			}
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			get := func() int {
				resp, err := hc.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := get(); got != http.StatusOK {
				t.Fatalf("with the token in the file: %d", got)
			}
			write("new") // renewed, and the old one revoked
			mu.Lock()
			valid = "new"
			mu.Unlock()
			if got := get(); got != http.StatusUnauthorized {
				t.Errorf("the first request after the renewal: %d, want 401 (it still carries the old token)", got)
			}
			if got := get(); got != tc.wantNew {
				t.Errorf("the second request after the renewal: %d, want %d", got, tc.wantNew)
			}
		})
	}
}
