package kfed

import (
	"sync"
	"time"
)

// userAgent names the plugin's requests in the API server's logs.
const userAgent = "coredns-kfed"

// failureLog logs an informer's list and watch calls that fail (its report
// is a kubeclient.ListWatch's): the first failure, then at most one a
// minute while they go on, and the first success after them.
type failureLog struct {
	federation string
	what       string // "DNSEndpoints"
	meanwhile  string // what the plugin does while it cannot read them, or ""

	mu      sync.Mutex
	failing bool      // the last call failed
	logged  time.Time // when a failure was last logged
}

func (f *failureLog) report(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil && time.Since(f.logged) >= time.Minute:
		f.failing, f.logged = true, time.Now()
		log.Warningf("federation %s: listing or watching %s%s: %v", f.federation, f.what, f.meanwhile, err)
	case err == nil && f.failing:
		f.failing, f.logged = false, time.Time{}
		log.Infof("federation %s: watching %s again", f.federation, f.what)
	}
}
