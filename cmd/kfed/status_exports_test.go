package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// kfed status lists, per cluster, each name exported with the MCS API:
// the export's conditions and the import kfed wrote.
func TestStatusListsExportsAndImports(t *testing.T) {
	f := framework.Start(t, framework.Members(2), framework.MemberCRDs())
	f.JoinAll()
	f.StartController(manager.Options{})
	ctx := context.Background()
	for _, m := range []string{"cluster-1", "cluster-2"} {
		if err := f.Client(m).Create(ctx, framework.Namespace("shop")); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	se := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}
	for _, o := range []client.Object{svc, se} {
		if err := f.Client("cluster-1").Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"EXPORTED SERVICE", "shop/cart", "Valid=True", "Ready=True", "Conflict=False", "ClusterSetIP", "from cluster-1"}
	var out string
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		var err error
		out, err = run(t, "status", "--kubeconfig", f.Kubeconfig, "--color", "never")
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				return &missing{w}
			}
		}
		// Both clusters hold the import: cluster-1 a row with the export too.
		if strings.Count(out, "from cluster-1") != 2 {
			return &missing{"an import row per cluster"}
		}
		return nil
	})
	t.Log(out)
}

type missing struct{ what string }

func (m *missing) Error() string { return "kfed status lacks " + m.what }
