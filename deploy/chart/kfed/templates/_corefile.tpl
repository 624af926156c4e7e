{{/*
kfed.corefile: the Corefile of the member's kfed CoreDNS. Its kfed block is
the one devenv.KfedCorefile writes for `kfed dev up` (test/e2e/release's chart test
compares them), with the kubeconfig the chart mounts. It names no rtt
namespace: the plugin reads its checkers' round-trip times from the
member's own namespace, kfed-member-CLUSTER, the only one its identity may
read reports in (ADR 0013). With coredns.clusterset.enabled, a second block
serves the clusterset zone from this cluster through the pod's
ServiceAccount.
*/}}
{{- define "kfed.corefile" -}}
{{ .Values.domain }}:5353 {
    errors
    {{- if .Values.coredns.log }}
    log
    {{- end }}
    health :8080
    ready :8181
    prometheus :9153
    {{- if .Values.coredns.cache }}
    cache {{ .Values.coredns.cache }}
    {{- end }}
    reload
    kfed {
        federation {{ .Values.federation }}
        cluster {{ .Values.member.cluster }}
        kubeconfig "/etc/kfed/kubeconfig"
        trusted_namespaces {{ include "kfed.trustedNamespaces" (list . .Values.member.controlPlane.namespace) | replace "," " " }}
        {{- with .Values.coredns.ttl }}
        ttl {{ . }}
        {{- end }}
    }
}
{{- if .Values.coredns.clusterset.enabled }}
{{ .Values.coredns.clusterset.zone }}:5353 {
    errors
    {{- if .Values.coredns.log }}
    log
    {{- end }}
    ready :8181
    prometheus :9153
    clusterset {{ .Values.coredns.clusterset.zone }}
}
{{- end }}
{{- end }}

{{/*
kfed.forward: the server block the cluster's own CoreDNS needs to send the
federation's zone to kfed's CoreDNS (README.md, "The member's own DNS").
*/}}
{{- define "kfed.forward" -}}
{{ .Values.domain }}:53 {
    errors
    cache 30
    forward . {{ .Values.coredns.service.clusterIP | default "KFED_COREDNS_CLUSTER_IP" }}
}
{{- if .Values.coredns.clusterset.enabled }}
{{ .Values.coredns.clusterset.zone }}:53 {
    errors
    cache 5
    forward . {{ .Values.coredns.service.clusterIP | default "KFED_COREDNS_CLUSTER_IP" }}
}
{{- end }}
{{- end }}
