{{/* Chart name. */}}
{{- define "gateway-routes.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Standard labels. */}}
{{- define "gateway-routes.labels" -}}
app.kubernetes.io/name: {{ include "gateway-routes.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nvcf
app.kubernetes.io/component: gateway
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Namespace of the Gateway. */}}
{{- define "gateway-routes.gatewayNamespace" -}}
{{- default .Release.Namespace .Values.gateway.namespace -}}
{{- end -}}

{{/* apiVersion of Gateway and HTTPRoute (GA since Gateway API v1.0). */}}
{{- define "gateway-routes.gatewayApiVersion" -}}
gateway.networking.k8s.io/v1
{{- end -}}

{{/* apiVersion of ReferenceGrant (v1beta1, served by every v1.x release). */}}
{{- define "gateway-routes.referenceGrantApiVersion" -}}
gateway.networking.k8s.io/v1beta1
{{- end -}}

{{/* Render-time guards: each message names the value to set. */}}
{{- define "gateway-routes.validate" -}}
{{- $l := .Values.listeners -}}
{{- if and $l.workerGrpc.enabled (ne $l.workerGrpc.protocol "HTTPS") -}}
{{- fail (printf "gateway-routes: listeners.workerGrpc.protocol=%s would carry worker gRPC in cleartext (plain TCP listener); set listeners.workerGrpc.protocol=HTTPS (TLS ends at the Gateway, GRPCRoute h2c to the router)" (toString $l.workerGrpc.protocol)) -}}
{{- end -}}
{{- if not (has .Values.tls.mode (list "certificate" "secret")) -}}
{{- fail (printf "gateway-routes: unknown tls.mode %q; set tls.mode to certificate (cert-manager Certificates) or secret (existing Secrets)" (toString .Values.tls.mode)) -}}
{{- end -}}
{{- if and .Values.gateway.create (eq .Values.tls.mode "certificate") (not .Values.tls.issuerRef.name) -}}
{{- fail "gateway-routes: tls.mode=certificate needs an issuer for the listener certificates; set tls.issuerRef.name (and kind/group)" -}}
{{- end -}}
{{- if .Values.gateway.create -}}
{{- $_ := required "gateway-routes: gateway.className is empty; set it to the GatewayClass of your Gateway implementation (or gateway.create=false to attach to an existing Gateway)" .Values.gateway.className -}}
{{- end -}}
{{- if $l.invocation.enabled -}}
{{- $_ := required "gateway-routes: listeners.invocation.hostname is empty; set it to llm.invocation.<domain>" $l.invocation.hostname -}}
{{- end -}}
{{- if $l.workerGrpc.enabled -}}
{{- $_ := required "gateway-routes: listeners.workerGrpc.hostname is empty; set it to the host of the workers' gRPC dial address (request-router router.grpcDialAddress)" $l.workerGrpc.hostname -}}
{{- with $l.workerGrpc.listenerHostname -}}
{{- $lh := . -}}
{{- range prepend ($l.workerGrpc.authorityHostnames | default list) $l.workerGrpc.hostname -}}
{{- if not (include "gateway-routes.hostnameMatches" (list $lh .)) -}}
{{- fail (printf "gateway-routes: listeners.workerGrpc.listenerHostname %q does not match %q; a Gateway routes worker gRPC (SNI: the dial host, :authority: the advertised names) only within the listener hostname; set it to a wildcard covering the dial host and listeners.workerGrpc.authorityHostnames (e.g. *.workers.<domain>), or leave it empty" $lh .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when Gateway API hostname pattern (index . 0) matches hostname or pattern (index . 1):
equal, or `*.suffix` against a name (or narrower pattern) ending in `.suffix`. */}}
{{- define "gateway-routes.hostnameMatches" -}}
{{- $p := index . 0 | lower -}}
{{- $h := index . 1 | lower -}}
{{- if eq $p $h -}}true
{{- else if and (hasPrefix "*." $p) (hasSuffix (trimPrefix "*" $p) $h) (gt (len $h) (len (trimPrefix "*" $p))) -}}true
{{- end -}}
{{- end -}}
