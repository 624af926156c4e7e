package kfed

// Ready implements CoreDNS's ready.Readiness: the plugin is ready once its
// index holds a full list of the federation's DNSEndpoints and its servers
// listen (see package listening for why both).
func (k *Kfed) Ready() bool { return k.synced.Load() && k.listening.Load() }
