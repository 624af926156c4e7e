package services

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// loopbackLoadBalancerServesMemberService needs two members with load
// balancers: cluster-2's address comes from its own block, not the first's.
// Its Service is not federated: kfed leaves it alone.
func loopbackLoadBalancerServesMemberService(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	member := f.Client("cluster-2")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{
				{Name: "tcp", Port: 8080, TargetPort: intstr.FromInt32(8080)},
			},
		},
	}
	if err := member.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}

	var addr string
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		if err := member.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		ing := svc.Status.LoadBalancer.Ingress
		if len(ing) != 1 {
			return fmt.Errorf("ingress %v", ing)
		}
		a, err := netip.ParseAddr(ing[0].IP)
		if err != nil {
			return err
		}
		if block := loopbacklb.Block(f.LBBase, 1); !block.Contains(a) {
			t.Fatalf("cluster-2's Service got %v, outside its block %v", a, block)
		}
		addr = net.JoinHostPort(ing[0].IP, "8080")
		return nil
	})

	// A plain TCP client is echoed.
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("connecting to the load balancer: %v", err)
	}
	fmt.Fprintf(c, "hello kfed\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "hello kfed\n" {
		t.Fatalf("echo answered %q, %v", line, err)
	}
	if got := httpStatus(t, "http://"+addr+"/healthz"); got != http.StatusOK {
		t.Fatalf("GET /healthz = %d, want 200", got)
	}

	tests := []struct {
		failure string
		check   func() error
	}{
		{loopbacklb.FailureHTTPError, func() error {
			if got := httpStatus(t, "http://"+addr+"/healthz"); got != http.StatusServiceUnavailable {
				return fmt.Errorf("GET /healthz = %d, want 503", got)
			}
			return nil
		}},
		{loopbacklb.FailureRefuse, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return errors.New("connection accepted, want refused")
			}
			return nil
		}},
		{"", func() error {
			if got := httpStatus(t, "http://"+addr+"/healthz"); got != http.StatusOK {
				return fmt.Errorf("GET /healthz = %d, want 200", got)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run("failure="+tt.failure, func(t *testing.T) {
			patch := client.MergeFrom(svc.DeepCopy())
			if tt.failure == "" {
				delete(svc.Annotations, loopbacklb.FailureAnnotation)
			} else {
				metav1.SetMetaDataAnnotation(&svc.ObjectMeta, loopbacklb.FailureAnnotation, tt.failure)
			}
			if err := member.Patch(ctx, svc, patch); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(t, 10*time.Second, func(context.Context) error { return tt.check() })
		})
	}

	// Deleting the Service frees the address: nothing listens any more.
	if err := member.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, func(context.Context) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return errors.New("still listening after the Service was deleted")
		}
		return nil
	})
}

// deploymentBeyondCapacityHasRunningAndUnschedulablePods needs one member
// with two simulated nodes of 4 CPUs: five pods of 1600m leave one that fits
// nowhere (two fit per node).
func deploymentBeyondCapacityHasRunningAndUnschedulablePods(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	member := f.Client("cluster-1")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(5)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1600m"),
					}},
				}}},
			},
		},
	}
	if err := member.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	// Its pods go with it (the member's garbage collector deletes them).
	t.Cleanup(func() {
		if err := member.Delete(context.Background(), dep, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Errorf("deleting the Deployment: %v", err)
		}
	})
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := member.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return err
		}
		running, unschedulable, why := 0, 0, ""
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && fedtest.PodReady(&p) {
				running++
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					unschedulable++
					why = c.Message
				}
			}
		}
		if running != 4 || unschedulable != 1 {
			return fmt.Errorf("%d pods: %d running and ready, %d unschedulable (%s); want 4 and 1", len(pods.Items), running, unschedulable, why)
		}
		return nil
	})
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
