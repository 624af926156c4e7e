// Package mcs tests kfed's Multi-Cluster Services API against real API
// servers: ServiceExports in members become ServiceImports and
// EndpointSlices in every member, with the KEP's conditions, and on `kfed dev
// up`'s bed their names answer in each member's own CoreDNS.
package mcs

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/controllers/mcs"
	"github.com/kfed-io/kfed/test/framework"
)

var members = []string{"cluster-1", "cluster-2", "cluster-3"}

const ns = "shop"

func service(name string, headless bool) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "hello"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if headless {
		s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	return s
}

func hello() *appsv1.Deployment {
	labels := map[string]string{"app": "hello"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "hello:1"}}},
			},
		},
	}
}

func export(name string) *mcsv1beta1.ServiceExport {
	return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func create(t *testing.T, f *framework.Federation, cluster string, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := f.Client(cluster).Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s in %s: %v", o, o.GetName(), cluster, err)
		}
	}
}

// conditions is an export's "Type=Status/Reason" list, sorted.
func conditions(ctx context.Context, f *framework.Federation, cluster, name string) ([]string, error) {
	var se mcsv1beta1.ServiceExport
	if err := f.Client(cluster).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &se); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range se.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	slices.Sort(out)
	return out, nil
}

func wantConditions(t *testing.T, f *framework.Federation, cluster, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got, err := conditions(ctx, f, cluster, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("export %s in %s: conditions %v, want %v", name, cluster, got, want)
		}
		return nil
	})
}

func TestExportsBecomeImportsInEveryMember(t *testing.T) {
	f := framework.Start(t, framework.Workloads(1, "8"), framework.MemberCRDs())
	f.JoinAll()
	f.StartController(manager.Options{})
	for _, m := range members {
		create(t, f, m, framework.Namespace(ns))
	}

	t.Run("kfed join gives each member its cluster ID", func(t *testing.T) {
		for _, m := range members {
			var cp aboutv1alpha1.ClusterProperty
			if err := f.Client(m).Get(context.Background(), client.ObjectKey{Name: aboutv1alpha1.ClusterIDProperty}, &cp); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			if cp.Spec.Value != m {
				t.Errorf("%s calls itself %q", m, cp.Spec.Value)
			}
		}
	})

	t.Run("an export in cluster-1 and cluster-2 is imported with both clusters' endpoints in cluster-3", func(t *testing.T) {
		for _, m := range members[:2] {
			create(t, f, m, hello(), service("hello", false), export("hello"))
		}
		for _, m := range members[:2] {
			wantConditions(t, f, m, "hello", "Valid=True/Valid", "Ready=True/Exported", "Conflict=False/NoConflicts")
		}
		for _, m := range members {
			wantImport(t, f, m, "hello", mcsv1beta1.ClusterSetIP, "cluster-1", "cluster-2")
		}
	})

	t.Run("a type conflict is reported on both exports and the oldest wins", func(t *testing.T) {
		// cluster-2's export is the older: it wins although cluster-1
		// comes first by name.
		create(t, f, "cluster-2", service("typed", true), export("typed"))
		time.Sleep(1100 * time.Millisecond) // creation times are in seconds
		create(t, f, "cluster-1", service("typed", false), export("typed"))
		for _, m := range members[:2] {
			wantConditions(t, f, m, "typed", "Valid=True/Valid", "Ready=True/Exported", "Conflict=True/TypeConflict")
		}
		wantImport(t, f, "cluster-3", "typed", mcsv1beta1.Headless, "cluster-1", "cluster-2")
	})

	t.Run("an ExternalName Service is not valid and imports nothing", func(t *testing.T) {
		ext := service("ext", false)
		ext.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
		create(t, f, "cluster-3", ext, export("ext"))
		wantConditions(t, f, "cluster-3", "ext", "Valid=False/InvalidServiceType", "Ready=False/Failed")
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var events corev1.EventList
			if err := f.Client("cluster-3").List(ctx, &events, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "ServiceExport" && e.InvolvedObject.Name == "ext" &&
					e.Type == corev1.EventTypeWarning && e.Reason == "InvalidServiceType" {
					return nil
				}
			}
			return fmt.Errorf("no Warning Event InvalidServiceType on the export")
		})
		for _, m := range members {
			err := f.Client(m).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ext"}, &mcsv1beta1.ServiceImport{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: an import of an ExternalName Service: %v", m, err)
			}
		}
	})

	t.Run("when both exports go, the import, its slices and derived Service go from every member", func(t *testing.T) {
		for _, m := range members[:2] {
			if err := f.Client(m).Delete(context.Background(), export("hello")); err != nil {
				t.Fatal(err)
			}
		}
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			for _, m := range members {
				c := f.Client(m)
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, &mcsv1beta1.ServiceImport{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s: the import is still there (%v)", m, err)
				}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: mcs.DerivedName("hello")}, &corev1.Service{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s: the derived Service is still there (%v)", m, err)
				}
				var left discoveryv1.EndpointSliceList
				if err := c.List(ctx, &left, client.InNamespace(ns), client.MatchingLabels{mcsv1beta1.LabelServiceName: "hello"}); err != nil {
					return err
				}
				if len(left.Items) > 0 {
					return fmt.Errorf("%s: %d EndpointSlices are still there", m, len(left.Items))
				}
			}
			return nil
		})
	})
}

// wantImport waits until cluster holds import name of type typ from
// exporters, with a ClusterSetIP (its derived Service's) when typ says so,
// and an EndpointSlice with endpoints from each exporter.
func wantImport(t *testing.T, f *framework.Federation, cluster, name string, typ mcsv1beta1.ServiceImportType, exporters ...string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		c := f.Client(cluster)
		var si mcsv1beta1.ServiceImport
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &si); err != nil {
			return fmt.Errorf("%s: %w", cluster, err)
		}
		var from []string
		for _, s := range si.Status.Clusters {
			from = append(from, s.Cluster)
		}
		if si.Spec.Type != typ || !slices.Equal(from, exporters) {
			return fmt.Errorf("%s: import of type %s from %v, want %s from %v", cluster, si.Spec.Type, from, typ, exporters)
		}
		if typ == mcsv1beta1.ClusterSetIP {
			var derived corev1.Service
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: mcs.DerivedName(name)}, &derived); err != nil {
				return fmt.Errorf("%s: derived Service: %w", cluster, err)
			}
			if len(si.Spec.IPs) == 0 || !slices.Equal(si.Spec.IPs, derived.Spec.ClusterIPs) {
				return fmt.Errorf("%s: import IPs %v, derived Service's %v", cluster, si.Spec.IPs, derived.Spec.ClusterIPs)
			}
		} else if len(si.Spec.IPs) > 0 {
			return fmt.Errorf("%s: a headless import has IPs %v", cluster, si.Spec.IPs)
		}
		var list discoveryv1.EndpointSliceList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
			mcsv1beta1.LabelServiceName: name, discoveryv1.LabelManagedBy: mcs.ManagedBy,
		}); err != nil {
			return err
		}
		var sources []string
		for _, s := range list.Items {
			if len(s.Endpoints) > 0 && len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == si.UID {
				sources = append(sources, s.Labels[mcsv1beta1.LabelSourceCluster])
			}
		}
		slices.Sort(sources)
		if typ == mcsv1beta1.ClusterSetIP && !slices.Equal(sources, exporters) {
			return fmt.Errorf("%s: EndpointSlices with endpoints from %v, want %v", cluster, sources, exporters)
		}
		return nil
	})
}
