package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/deployments"
)

func TestDeploymentRowsShowEachClusterAndWhatIsWrong(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			kfedv1alpha1.AnnotationFederated: "true",
			clusterreplicas.Annotation:       `{"cluster-1":{"planned":20,"ready":20,"reported":true},"cluster-2":{"planned":12,"ready":10,"reported":true,"capacity":10,"waiting":2}}`,
		}},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(40))},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 30, Conditions: []appsv1.DeploymentCondition{
			{Type: kfedv1alpha1.DeploymentSynced, Status: corev1.ConditionFalse, Reason: deployments.ReasonMemberConflict, Message: "cluster-3 has one"},
		}},
	}
	got := strings.Join(deploymentRows(palette{}, d, []string{"cluster-1", "cluster-2", "cluster-3"}), "\n")
	want := strings.Join([]string{
		"shop/web\tcluster-1\t20\t20\t",
		"\tcluster-2\t12\t10\tfull: runs 10, 2 waiting",
		"\tcluster-3\t-\t-\t",
		"\t→ total\t40\t30\tSynced=False (MemberConflict: cluster-3 has one)",
	}, "\n")
	if got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
}
