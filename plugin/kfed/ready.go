package kfed

// Ready implements CoreDNS's ready.Readiness: the plugin is ready once its
// index holds a full list of the federation's DNSEndpoints.
func (k *Kfed) Ready() bool { return k.synced.Load() }
