package registry

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// pod is a Deployment's pod as a member's API server holds it: two
// containers with probes, resources, environment and mounts, the projected
// service account volume, the default tolerations, and a status.
func pod(i int) *corev1.Pod {
	now := metav1.NewTime(time.Unix(1_700_000_000, 0))
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/team/" + name + ":v1.2.3", ImagePullPolicy: corev1.PullIfNotPresent,
			Args:  []string{"--port=8080", "--log-level=info"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "MODE", Value: "production"}, {Name: "UPSTREAM", Value: "http://backend.default.svc:8080"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			LivenessProbe: probe, ReadinessProbe: probe,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, Started: new(true), Image: "registry.example.com/team/" + name + ":v1.2.3",
			ImageID:     "registry.example.com/team/" + name + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}
	}
	expiry := int64(3607)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-7d9f8c6b5d-%05d", i), Namespace: "default", UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
			ResourceVersion: "123456", CreationTimestamp: now,
			Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "7d9f8c6b5d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d",
				UID: "1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("web"), container("sidecar")}, NodeName: "node-1",
			ServiceAccountName: "default", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			SchedulerName: corev1.DefaultSchedulerName,
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
						FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.244.1.7", StartTime: &now, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{status("web"), status("sidecar")},
		},
	}
}

func TestTrimPodKeepsWhatCapacityAndBalancersRead(t *testing.T) {
	unschedulable := pod(1)
	unschedulable.Spec.NodeName = ""
	unschedulable.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}}
	deleting := pod(2)
	deleting.DeletionTimestamp = new(metav1.Now())
	for name, p := range map[string]*corev1.Pod{"running": pod(0), "unschedulable": unschedulable, "being deleted": deleting} {
		t.Run(name, func(t *testing.T) {
			want := p.DeepCopy()
			got, err := trimPod(p)
			if err != nil {
				t.Fatal(err)
			}
			tp := got.(*corev1.Pod)
			if tp.Spec.NodeName != want.Spec.NodeName || tp.Status.Phase != want.Status.Phase ||
				len(tp.Status.Conditions) != len(want.Status.Conditions) || !tp.DeletionTimestamp.Equal(want.DeletionTimestamp) ||
				tp.CreationTimestamp != want.CreationTimestamp || tp.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != want.Labels[appsv1.DefaultDeploymentUniqueLabelKey] ||
				len(tp.OwnerReferences) != 1 || tp.Name != want.Name {
				t.Errorf("trimmed pod lost what kfed reads: %+v", tp)
			}
			if len(tp.Spec.Containers) != 0 || len(tp.Status.ContainerStatuses) != 0 || len(tp.Spec.Volumes) != 0 {
				t.Errorf("trimmed pod keeps its containers or volumes")
			}
		})
	}
}

func TestTrimReplicaSetKeepsItsOwnerRevisionAndCounts(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: new(true)}}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: new(int32(3)), Template: corev1.PodTemplateSpec{Spec: pod(0).Spec}},
		Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2},
	}
	got, err := trimReplicaSet(rs.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trs := got.(*appsv1.ReplicaSet)
	if metav1.GetControllerOf(trs) == nil || trs.Annotations["deployment.kubernetes.io/revision"] != "3" ||
		*trs.Spec.Replicas != 3 || trs.Status.ReadyReplicas != 2 || len(trs.Spec.Template.Spec.Containers) != 0 {
		t.Errorf("trimmed ReplicaSet: %+v", trs)
	}
}

// BenchmarkMemberCachePod is the memory a member cache holds a pod in,
// untrimmed (as before) and trimmed: 10,000 pods of a member's Deployments,
// live heap after collection.
func BenchmarkMemberCachePod(b *testing.B) {
	const n = 10_000
	for _, c := range []struct {
		name string
		trim func(any) (any, error)
	}{{"untrimmed", func(o any) (any, error) { return o, nil }}, {"trimmed", trimPod}} {
		b.Run(c.name, func(b *testing.B) {
			var perPod float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				pods := make([]any, n)
				for i := range pods {
					// A deep copy: a decoded pod shares nothing with another.
					pods[i], _ = c.trim(pod(i).DeepCopy())
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(pods)
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}
