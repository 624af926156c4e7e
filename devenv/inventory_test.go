package devenv

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestExecCredentialHandsOutTheNamedMembersToken(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TokenNamespace, Name: "cluster-2"}, Data: map[string][]byte{"token": []byte("t2")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: TokenNamespace, Name: "cluster-3"}})
	info := func(config string) string {
		return `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,` +
			`"cluster":{"server":"https://127.0.0.1:6443","config":` + config + `}}}`
	}
	for _, c := range []struct {
		name, execInfo, want, wantErr string
	}{
		{"the profile's member gets its token", info(`{"clusterName":"cluster-2"}`), "t2", ""},
		{"no cluster info: provideClusterInfo is off", `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{}}`, "", "provideClusterInfo"},
		{"an extension without clusterName", info(`{"name":"cluster-2"}`), "", "names no clusterName"},
		{"a member without a Secret", info(`{"clusterName":"cluster-9"}`), "", "not found"},
		{"a Secret without a token", info(`{"clusterName":"cluster-3"}`), "", "has no token"},
		{"no exec info at all", "", "", "KUBERNETES_EXEC_INFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExecCredential(context.Background(), cs, TokenNamespace, []byte(c.execInfo))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(got)
			if got.Status == nil || got.Status.Token != c.want || !strings.Contains(string(out), `"kind":"ExecCredential"`) {
				t.Errorf("printed %s, want an ExecCredential with token %q", out, c.want)
			}
		})
	}
}
