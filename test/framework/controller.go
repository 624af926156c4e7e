package framework

import (
	"cmp"
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
)

// JoinAll joins every member to the federation, as `kfed join` does.
func (f *Federation) JoinAll() {
	f.t.Helper()
	raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, m := range f.Members {
		_, err := clusters.Join(context.Background(), f.Client("federation"), clusters.JoinOptions{
			Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw,
		})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// StartController runs kfed's controller manager in-process against the
// control plane until the test ends or stop is called. Federation and domain
// default to "fed" and "example.com", the member probe interval to 300 ms.
func (f *Federation) StartController(o manager.Options) (stop func()) {
	f.t.Helper()
	o.MetricsAddr, o.HealthAddr, o.SharedProcess = cmp.Or(o.MetricsAddr, "0"), cmp.Or(o.HealthAddr, "0"), true
	o.Federation, o.Domain = cmp.Or(o.Federation, "fed"), cmp.Or(o.Domain, "example.com")
	o.ClusterProbeInterval = cmp.Or(o.ClusterProbeInterval, 300*time.Millisecond)
	o.Logger = Logger(f.t)
	mgr, err := manager.New(f.ControlPlane.Config, o)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			f.t.Errorf("controller manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.t.Cleanup(stop)
	return stop
}
