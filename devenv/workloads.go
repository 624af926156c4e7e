package devenv

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
