package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
)

const (
	// settle is how long a frame waits after a change for the changes that
	// come with it (a controller writes a Service's status, its
	// DNSEndpoint, the shards' status within moments), so that one burst
	// draws one frame.
	settle = 250 * time.Millisecond
	// memberRetry is how often a member whose watch could not start (it
	// cannot be reached, its kubeconfig Secret is missing) is tried again.
	memberRetry = 10 * time.Second
)

// controlPlaneKinds are what status shows from the control plane.
func controlPlaneKinds() []client.Object {
	return []client.Object{&kfedv1alpha1.Cluster{}, &corev1.Service{}, &extdnsv1alpha1.DNSEndpoint{},
		&kfedv1alpha1.HealthReport{}, &appsv1.Deployment{}, &kfedv1alpha1.Balancer{}}
}

// memberKinds are what status shows from a member.
func memberKinds() []client.Object {
	return []client.Object{&corev1.Service{}, &kfedv1alpha1.Balancer{}}
}

// watchStatus prints the status, as draw writes it, then again each time a
// watch on the control plane or on a member reports a change that alters it,
// until ctx ends; an error of draw is shown in the frame, in p's red. A
// terminal is cleared before each frame; otherwise frames follow each other,
// each under a line with its time.
func watchStatus(ctx context.Context, w io.Writer, fed client.Client, cfg *rest.Config, draw func(io.Writer) error, p palette, clear bool) error {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if err := watchKinds(ctx, cfg, fed.Scheme(), controlPlaneKinds(), poke); err != nil {
		return fmt.Errorf("watching the control plane: %w", err)
	}
	members := map[string]context.CancelFunc{}
	defer func() {
		for _, stop := range members {
			stop()
		}
	}()
	var last string
	for frames := 0; ; {
		var body bytes.Buffer
		if err := draw(&body); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The control plane may come back; the watches retry.
			fmt.Fprintf(&body, "%s\n", p.bad(err.Error()))
		}
		if frame := body.String(); frames == 0 || frame != last {
			if clear {
				io.WriteString(w, "\x1b[H\x1b[2J")
			} else if frames > 0 {
				io.WriteString(w, "\n")
			}
			last = frame
			frames++
			fmt.Fprintf(w, "kfed status at %s (watching; interrupt to stop)\n\n%s", time.Now().Format(time.TimeOnly), frame)
		}
		watchMembers(ctx, fed, members, poke)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(settle):
		}
		select {
		case <-changed:
		default:
		}
	}
}

// watchMembers starts a watch on each joined member not watched yet and
// stops those on members that left.
func watchMembers(ctx context.Context, fed client.Client, running map[string]context.CancelFunc, poke func()) {
	var list kfedv1alpha1.ClusterList
	if err := fed.List(ctx, &list); err != nil {
		return // the frame says so; the control plane's watch brings the next try
	}
	joined := map[string]bool{}
	for i := range list.Items {
		c := list.Items[i].DeepCopy()
		joined[c.Name] = true
		if _, ok := running[c.Name]; ok {
			continue
		}
		mctx, stop := context.WithCancel(ctx)
		running[c.Name] = stop
		go watchMember(mctx, fed, c, poke)
	}
	for name, stop := range running {
		if !joined[name] {
			stop()
			delete(running, name)
		}
	}
}

// watchMember watches one member's Services and Balancers, trying again
// every memberRetry until its watch starts.
func watchMember(ctx context.Context, fed client.Client, c *kfedv1alpha1.Cluster, poke func()) {
	for {
		cfg, _, err := clusters.LoadRESTConfig(ctx, fed, c)
		if err == nil {
			if err = watchKinds(ctx, cfg, fed.Scheme(), memberKinds(), poke); err == nil {
				poke()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(memberRetry):
		}
	}
}

// watchKinds starts informers on kinds in the cluster cfg reaches, which call
// poke on every add, update and delete until ctx ends. A kind the cluster
// does not serve (no Balancer CRD in a member) is skipped.
func watchKinds(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, kinds []client.Object, poke func()) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// The informers run until ctx ends, or stop at once when they cannot
	// all start, so that a retry does not leave a second set running.
	ctx, stop := context.WithCancel(ctx)
	started := make(chan error, 1)
	go func() {
		started <- c.Start(ctx)
		stop()
	}()
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	for _, obj := range kinds {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if meta.IsNoMatchError(err) {
			continue
		}
		if err == nil {
			_, err = inf.AddEventHandler(h)
		}
		if err != nil {
			stop()
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	select {
	case err := <-started:
		return fmt.Errorf("watch ended: %w", err)
	default:
		return nil
	}
}
