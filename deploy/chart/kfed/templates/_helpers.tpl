{{/*
Names are fixed, not release-prefixed: kfed-controller's leader Lease, the
ServiceAccounts `kfed join` and the agents name, and the generated RBAC all
use them, and one kfed runs per cluster.
*/}}

{{- define "kfed.validate" -}}
{{- if not (has .Values.role (list "controlPlane" "member")) }}
{{- fail (printf "role must be controlPlane or member, not %q" .Values.role) }}
{{- end }}
{{- if not .Values.federation }}{{ fail "federation is required: the federation's name, the same in every release" }}{{ end }}
{{- if not .Values.domain }}{{ fail "domain is required: the federation's DNS suffix" }}{{ end }}
{{- if and (eq .Values.role "member") (not .Values.member.cluster) }}
{{- fail "member.cluster is required with role=member: this cluster's name as joined (kfed join NAME)" }}
{{- end }}
{{- end }}

{{- define "kfed.labels" -}}
app.kubernetes.io/part-of: kfed
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* kfed.selector: (list $ "kfed-controller") */}}
{{- define "kfed.selector" -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
{{- end }}

{{/* kfed.image: (list $ "kfed-controller") */}}
{{- define "kfed.image" -}}
{{- $ := index . 0 -}}
{{ printf "%s/%s:%s" $.Values.image.registry (index . 1) ($.Values.image.tag | default $.Chart.AppVersion) }}
{{- end }}

{{/*
kfed.rules: the rules of the first object of a kind in one of files/rbac,
which `make generate` copies from the roles controller-gen generates from the
code (deploy/rbac) and from deploy/member and deploy/coredns.
(list $ "files/rbac/controller.yaml" "ClusterRole")
*/}}
{{- define "kfed.rules" -}}
{{- $ := index . 0 }}{{ $file := index . 1 }}{{ $kind := index . 2 }}
{{- $found := false }}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($.Files.Get $file) -1 }}
{{- $o := fromYaml $doc }}
{{- if and (not $found) (eq (get $o "kind") $kind) }}
{{- $found = true }}
{{- toYaml (get $o "rules") }}
{{- end }}
{{- end }}
{{- if not $found }}{{ fail (printf "%s has no %s" $file $kind) }}{{ end }}
{{- end }}

{{/* The pod-level settings every kfed pod shares. */}}
{{- define "kfed.podSpec" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end }}

{{/* kfed.affinity: (list $ "kfed-controller"): the user's, or spread over nodes. */}}
{{- define "kfed.affinity" -}}
{{- $ := index . 0 }}
{{- if $.Values.affinity }}
affinity: {{ toYaml $.Values.affinity | nindent 2 }}
{{- else }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels: {{ include "kfed.selector" . | nindent 12 }}
{{- end }}
{{- end }}

{{- define "kfed.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  runAsUser: 65532
  capabilities: {drop: [ALL]}
  seccompProfile: {type: RuntimeDefault}
{{- end }}

{{/*
kfed.controlPlaneVolumes: (list $ .Values.healthcheck): how an agent in a
member reaches the control plane: a whole kubeconfig from a Secret, or the
chart's kubeconfig with the token from a Secret as a file.
*/}}
{{- define "kfed.controlPlaneVolumes" -}}
{{- $ := index . 0 }}{{ $c := index . 1 -}}
{{- if $c.kubeconfigSecret.name }}
- name: control-plane
  secret:
    secretName: {{ $c.kubeconfigSecret.name }}
    defaultMode: 0440
    items: [{key: {{ $c.kubeconfigSecret.key }}, path: kubeconfig}]
{{- else }}
- name: control-plane
  secret:
    secretName: kfed-control-plane-kubeconfig
    defaultMode: 0440
- name: token
  secret:
    secretName: {{ $c.tokenSecret.name }}
    defaultMode: 0440
    items: [{key: {{ $c.tokenSecret.key }}, path: token}]
{{- end }}
{{- end }}

{{- define "kfed.controlPlaneMounts" -}}
{{- $c := index . 1 -}}
- {name: control-plane, mountPath: /etc/kfed, readOnly: true}
{{- if not $c.kubeconfigSecret.name }}
- {name: token, mountPath: /var/run/secrets/kfed, readOnly: true}
{{- end }}
{{- end }}

{{/* kfed.componentLabels: (list $ "kfed-controller"): labels plus the component's name. */}}
{{- define "kfed.componentLabels" -}}
{{ include "kfed.labels" (index . 0) }}
app.kubernetes.io/name: {{ index . 1 }}
{{- end }}

{{/*
The container's memory limit, in bytes, for kfed's binaries to give the Go
runtime 90% of it as a soft limit (package memlimit), so that the collector
works harder near the limit rather than the kernel killing the process.
*/}}
{{- define "kfed.memoryLimitEnv" -}}
- name: KFED_CONTAINER_MEMORY_LIMIT
  valueFrom: {resourceFieldRef: {resource: limits.memory}}
{{- end }}

{{/*
kfed.trustedNamespaces: the namespaces trusted with names that are no
namespace's federated names, comma-separated: .Values.trustedNamespaces, or
kfed's namespace in the control plane (the second argument). Every reader of
DNSEndpoints (controller, agents, CoreDNS) is given the same.
*/}}
{{- define "kfed.trustedNamespaces" -}}
{{- $root := index . 0 -}}
{{- join "," ($root.Values.trustedNamespaces | default (list (index . 1))) -}}
{{- end }}

{{/*
kfed.hostnameReservations: .Values.hostnameReservations as kfed-controller's
--hostname-namespaces reads it: SUFFIX=NS[,NS...] entries separated by ';'.
*/}}
{{- define "kfed.hostnameReservations" -}}
{{- $entries := list -}}
{{- range $suffix, $namespaces := . -}}
{{- if not (kindIs "slice" $namespaces) -}}
{{- fail (printf "hostnameReservations.%s must be a list of namespaces" $suffix) -}}
{{- end -}}
{{- $entries = append $entries (printf "%s=%s" $suffix (join "," $namespaces)) -}}
{{- end -}}
{{- join ";" $entries -}}
{{- end -}}
