package dnsprovider

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// A batch refused for one bad group is split until that group is found:
// every other group is applied once, with few requests more.
func TestSendIsolatingAppliesEveryGroupButTheRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		groups    int
		bad       []int
		outage    bool
		maxSends  int
		wantError bool
	}{
		{"nothing refused: one request", 8, nil, false, 1, false},
		{"one bad group of eight", 8, []int{5}, false, 7, false},
		{"two bad groups", 8, []int{0, 7}, false, 11, false},
		{"a lone bad group", 1, []int{0}, false, 1, false},
		{"an outage stops at once", 8, nil, true, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var batch []int
			for i := range tc.groups {
				batch = append(batch, i)
			}
			applied := map[int]int{}
			sends := 0
			send := func(_ context.Context, b []int) error {
				sends++
				if tc.outage {
					return errors.New("503")
				}
				for _, g := range b {
					if slices.Contains(tc.bad, g) {
						return ErrRejected
					}
				}
				for _, g := range b {
					applied[g]++
				}
				return nil
			}
			refused, err := SendIsolating(context.Background(), batch, send, func(g int) (string, []Change) { return string(rune('a' + g)), nil })
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v", err)
			}
			if sends > tc.maxSends {
				t.Errorf("%d requests, want at most %d", sends, tc.maxSends)
			}
			if tc.outage {
				return
			}
			var names []string
			for _, r := range refused {
				names = append(names, r.Group)
			}
			var want []string
			for _, b := range tc.bad {
				want = append(want, string(rune('a'+b)))
			}
			if !slices.Equal(names, want) {
				t.Errorf("refused %v, want %v", names, want)
			}
			for _, g := range batch {
				if n := applied[g]; slices.Contains(tc.bad, g) && n != 0 || !slices.Contains(tc.bad, g) && n != 1 {
					t.Errorf("group %d applied %d times", g, n)
				}
			}
		})
	}
}
