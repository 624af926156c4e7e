package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// kwokNodeAnnotation marks the nodes KWOK simulates.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStages is KWOK's behaviour for our simulated nodes and pods: nodes turn
// Ready keeping the capacity we gave them, scheduled pods turn Running and
// Ready, deleted pods go away. It is the least the scheduler and the
// Deployment controller need to treat the nodes as real.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: kfed-node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Ready, status: "True", reason: KubeletReady, message: "simulated by kwok", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      - {type: MemoryPressure, status: "False", reason: KubeletHasSufficientMemory, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      - {type: DiskPressure, status: "False", reason: KubeletHasNoDiskPressure, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      - {type: PIDPressure, status: "False", reason: KubeletHasSufficientPID, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      addresses:
      - {type: InternalIP, address: {{ NodeIP | Quote }}}
      - {type: Hostname, address: {{ .metadata.name | Quote }}}
      allocatable:
      {{ YAML .status.allocatable 1 }}
      capacity:
      {{ YAML .status.capacity 1 }}
      nodeInfo:
        kubeletVersion: kwok
        architecture: amd64
        operatingSystem: linux
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: kfed-pod-running
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.spec.nodeName'
      operator: Exists
    - key: '.status.phase'
      operator: In
      values: ['Pending']
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, started: true, restartCount: 0, state: {running: {startedAt: {{ $now | Quote }}}}}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: kfed-pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    finalizers: {empty: true}
    delete: true
`

// startWorkloads runs a controller manager, a scheduler and KWOK for member c
// (index i picks its pod CIDR) and registers its simulated nodes.
func (e *Env) startWorkloads(ctx context.Context, c *Cluster, i int) error {
	kubeconfig := e.memberKubeconfig(c)
	stages := filepath.Join(e.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return err
	}
	procs := []*child{
		newChild(c.Name+"-kube-controller-manager", filepath.Join(e.binDir, "kube-controller-manager"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--leader-elect=false",
			"--cluster-name="+c.Name,
			// No kubelets heartbeat here; the node lifecycle controller would
			// taint KWOK's nodes and evict their pods.
			"--controllers=*,-node-lifecycle-controller,-node-ipam-controller",
			"--service-account-private-key-file="+e.saKey,
			"--root-ca-file="+filepath.Join(e.certDir, "ca.crt"),
			"--use-service-account-credentials=false",
			"--v=0"),
		newChild(c.Name+"-kube-scheduler", filepath.Join(e.binDir, "kube-scheduler"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--leader-elect=false", "--v=0"),
		newChild(c.Name+"-kwok", filepath.Join(e.binDir, "kwok"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--config="+stages,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
			"--node-ip=127.0.0.1",
			fmt.Sprintf("--cidr=10.%d.0.0/16", 64+i),
			"--node-lease-duration-seconds=0"),
	}
	for _, p := range procs {
		if err := p.start(); err != nil {
			return err
		}
		c.workloads = append(c.workloads, p)
	}
	return e.registerNodes(ctx, c)
}

// registerNodes creates the member's simulated nodes, spread over its zones,
// and waits for KWOK to make them Ready.
func (e *Env) registerNodes(ctx context.Context, c *Cluster) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	quantity := func(s string) resource.Quantity { return resource.MustParse(s) }
	res := corev1.ResourceList{
		corev1.ResourceCPU:    quantity(e.opts.NodeCPU),
		corev1.ResourceMemory: quantity(e.opts.NodeMem),
		corev1.ResourcePods:   quantity(e.opts.NodePods),
	}
	var names []string
	for n := range e.opts.Nodes {
		zone := c.Zones[n%len(c.Zones)]
		name := fmt.Sprintf("%s-node-%d", c.Name, n)
		names = append(names, name)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname":   name,
					"kubernetes.io/os":         "linux",
					"type":                     "kwok",
					corev1.LabelTopologyRegion: c.Region,
					corev1.LabelTopologyZone:   zone,
				},
			},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
		}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("registering node %s: %w", name, err)
		}
		// Status given at create may be dropped; set it through the
		// subresource. KWOK may update the node in between: retry then.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created.Status.Capacity, created.Status.Allocatable = res, res
			_, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if cur, gerr := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); gerr == nil {
					created = cur
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("setting capacity of node %s: %w", name, err)
		}
	}
	kwok := c.workloads[len(c.workloads)-1]
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, name := range names {
		err := poll(wctx, 200*time.Millisecond, kwok, func(ctx context.Context) error {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("node %s not Ready yet", name)
		})
		if err != nil {
			return fmt.Errorf("waiting for simulated nodes of %s: %w", c.Name, err)
		}
	}
	return nil
}
