package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// frames are the frames written to out so far, each without its time line.
func frames(out *process.Output) []string {
	var fr []string
	for _, f := range strings.Split(out.String(), "kfed status at ")[1:] {
		_, body, _ := strings.Cut(f, "\n")
		fr = append(fr, body)
	}
	return fr
}

// statusWatchDrawsAFrameOnEachChange (TestStatusWatchDrawsAFrameOnEachChange):
// kfed status --watch draws a frame when a Service appears and when its
// shard does. It joins the bed's member and runs kfed's controller until
// it ends.
func statusWatchDrawsAFrameOnEachChange(t *testing.T, f *framework.Federation) {
	f.JoinAll()
	t.Cleanup(f.StartController(manager.Options{}))
	fed := f.Client("federation")

	ctx, cancel := context.WithCancel(context.Background())
	out := &process.Output{}
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"status", "--watch", "--kubeconfig", f.Kubeconfig})
		root.SetOut(out)
		root.SetErr(out)
		done <- root.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kfed status --watch: %v", err)
		}
	}()
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		if fr := frames(out); len(fr) == 0 || !strings.Contains(fr[0], "SERVICE") {
			return fmt.Errorf("no first frame yet: %q", fr)
		}
		return nil
	})
	if first := frames(out)[0]; strings.Contains(first, "default/shop") {
		t.Fatalf("the first frame shows a Service not created yet:\n%s", first)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		},
	}
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// The Service appears, then its shard in the member, each in a later
	// frame, with nothing but the watches to say so.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		fr := frames(out)
		if last := fr[len(fr)-1]; !strings.Contains(last, "default/shop") || !strings.Contains(last, "created") {
			return fmt.Errorf("%d frames, the last without the Service and its shard:\n%s", len(fr), last)
		}
		return nil
	})
	t.Logf("%d frames", len(frames(out)))
	if text := strings.Join(frames(out), ""); strings.Contains(text, "\x1b[") {
		t.Errorf("colour written to a buffer:\n%q", text)
	}
}
