{{/* Chart name. */}}
{{- define "request-router.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name when it already contains the chart name (request-router). */}}
{{- define "request-router.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Headless Service name (per-pod DNS identities). */}}
{{- define "request-router.headlessName" -}}
{{- printf "%s-headless" (include "request-router.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* ServiceAccount name. */}}
{{- define "request-router.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "request-router.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Selector labels. */}}
{{- define "request-router.selectorLabels" -}}
app.kubernetes.io/name: {{ include "request-router.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* app.kubernetes.io/version: the router image tag (what runs), as a label value. */}}
{{- define "request-router.version" -}}
{{- .Values.image.tag | toString | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Pod template labels: no helm.sh/chart (a chart bump alone must not restart pods); the
version is the image tag, so the template changes exactly when the image does. */}}
{{- define "request-router.podLabels" -}}
{{ include "request-router.selectorLabels" . }}
app.kubernetes.io/version: {{ include "request-router.version" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nvcf
app.kubernetes.io/component: request-router
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Standard labels of every object: the pod labels plus helm.sh/chart. */}}
{{- define "request-router.labels" -}}
{{ include "request-router.podLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Image reference, pinned by tag (and digest when given). */}}
{{- define "request-router.image" -}}
{{- $img := printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- if .Values.image.digest -}}{{- $img = printf "%s@%s" $img .Values.image.digest -}}{{- end -}}
{{- $img -}}
{{- end -}}

{{/* Gateway API version as semver ("v1.6" -> "1.6.0"). */}}
{{- define "request-router.gatewayApiSemver" -}}
{{- $v := trimPrefix "v" .Values.gatewayApi.version -}}
{{- if eq (len (splitList "." $v)) 2 -}}{{- $v = printf "%s.0" $v -}}{{- end -}}
{{- $v -}}
{{- end -}}

{{/* apiVersion of GRPCRoute (v1 since Gateway API v1.1). */}}
{{- define "request-router.grpcRouteApiVersion" -}}
gateway.networking.k8s.io/v1
{{- end -}}

{{/* apiVersion of UDPRoute: v1 from v1.6; v1alpha2 (experimental channel only) up to v1.5. */}}
{{- define "request-router.udpRouteApiVersion" -}}
{{- if semverCompare ">=1.6.0-0" (include "request-router.gatewayApiSemver" .) -}}
gateway.networking.k8s.io/v1
{{- else if eq .Values.gatewayApi.channel "experimental" -}}
gateway.networking.k8s.io/v1alpha2
{{- else -}}
{{- fail (printf "request-router: UDPRoute is not served by Gateway API %s standard channel; set gatewayApi.version=v1.6 (or later), or gatewayApi.channel=experimental for %s" .Values.gatewayApi.version .Values.gatewayApi.version) -}}
{{- end -}}
{{- end -}}

{{/* Host of an https://host:port URL. */}}
{{/* The pods' advertised names as one Gateway API hostname pattern ("{pod_name}." -> "*."):
workers send them as HTTP/2 :authority on the gRPC leg. */}}
{{- define "request-router.authorityHostname" -}}
{{- .Values.router.advertisedHostnameTemplate | replace "{pod_name}" "*" | replace "{namespace}" .Release.Namespace | lower -}}
{{- end -}}

{{- define "request-router.grpcDialHost" -}}
{{- $hp := trimPrefix "https://" .Values.router.grpcDialAddress | splitList "/" | first -}}
{{- regexReplaceAll ":[0-9]+$" $hp "" | trimPrefix "[" | trimSuffix "]" -}}
{{- end -}}

{{/* How many router pods can run: 1 for a Deployment, else replicas or, with the autoscaler,
the larger of replicas and maxReplicas. Per-pod objects are rendered for ordinals below it. */}}
{{- define "request-router.podCount" -}}
{{- if eq .Values.workload.kind "Deployment" -}}1
{{- else if .Values.autoscaling.enabled -}}{{ max (int .Values.workload.replicas) (int .Values.autoscaling.maxReplicas) }}
{{- else -}}{{ int .Values.workload.replicas }}
{{- end -}}
{{- end -}}

{{/* The pods' names as a JSON list: <fullname>-<ordinal> (a StatefulSet's pod names; the
Deployment's one pod takes <fullname>-0 as its hostname and POD_NAME). */}}
{{- define "request-router.podNames" -}}
{{- $names := list -}}
{{- range $i := until (int (include "request-router.podCount" .)) -}}
{{- $names = append $names (printf "%s-%d" (include "request-router.fullname" $) $i) -}}
{{- end -}}
{{- $names | toJson -}}
{{- end -}}

{{/* The advertised name of pod (index 0: root context, index 1: pod name). */}}
{{- define "request-router.advertisedName" -}}
{{- $ := index . 0 -}}
{{- $.Values.router.advertisedHostnameTemplate | replace "{pod_name}" (index . 1) | replace "{namespace}" $.Release.Namespace | lower -}}
{{- end -}}

{{/* The QUIC dial host of pod (index 0: root context, index 1: pod name). */}}
{{- define "request-router.quicDialHost" -}}
{{- $ := index . 0 -}}
{{- $a := $.Values.router.quicDialAddress | replace "{pod_name}" (index . 1) | replace "{namespace}" $.Release.Namespace -}}
{{- regexReplaceAll ":[0-9]+$" $a "" | trimPrefix "[" | trimSuffix "]" | lower -}}
{{- end -}}

{{/* Selector of one pod: the chart's selector plus, for a StatefulSet, the pod-name label its
controller sets on each pod (the Deployment runs one pod, which the chart's selector selects). */}}
{{- define "request-router.podSelector" -}}
{{- $ := index . 0 -}}
{{ include "request-router.selectorLabels" $ }}
{{- if eq $.Values.workload.kind "StatefulSet" }}
statefulset.kubernetes.io/pod-name: {{ index . 1 }}
{{- end }}
{{- end -}}

{{/* The router's arguments (contract flags), in --flag=value form. */}}
{{- define "request-router.args" -}}
- --listen-addr=0.0.0.0:50071
- --reverse-tunnel-listen-addr=0.0.0.0:50072
- --backend-connectivity=reverse
- --advertised-hostname-template={{ .Values.router.advertisedHostnameTemplate }}
- --grpc-pylon-dial-addr={{ .Values.router.grpcDialAddress }}
- --reverse-tunnel-pylon-dial-addr={{ .Values.router.quicDialAddress | replace "{pod_name}" "$(POD_NAME)" | replace "{namespace}" "$(POD_NAMESPACE)" }}
- --tls-cert-path={{ .Values.tls.certPath }}
- --tls-key-path={{ .Values.tls.keyPath }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/*
Render-time guards. Each refused combination fails with a message naming the value to set.
Included by every template so nothing renders partially.
*/}}
{{- define "request-router.validate" -}}
{{- $v := .Values -}}
{{- if not $v.tls.enabled -}}
{{- fail "request-router: tls.enabled=false would run the router without TLS (the reference stack fell back to --quic-insecure); keep tls.enabled=true and set tls.secretName to the Secret from nvcf-pki" -}}
{{- end -}}
{{- $_ := required "request-router: tls.secretName is empty; set it to the kubernetes.io/tls Secret from nvcf-pki (certificate.secretName, default request-router-tls)" $v.tls.secretName -}}
{{- if or (and $v.tls.certPath (not $v.tls.keyPath)) (and $v.tls.keyPath (not $v.tls.certPath)) (not $v.tls.certPath) -}}
{{- fail "request-router: tls.certPath and tls.keyPath must be set together; set both (defaults /etc/stargate/tls/tls.crt and /etc/stargate/tls/tls.key)" -}}
{{- end -}}
{{- $dir := trimSuffix "/" $v.tls.mountPath -}}
{{- if or (ne (dir $v.tls.certPath) $dir) (ne (dir $v.tls.keyPath) $dir) -}}
{{- fail (printf "request-router: tls.certPath and tls.keyPath must be files directly in tls.mountPath (%s) so renewed certificates reach the router; set them to %s/tls.crt and %s/tls.key" $dir $dir $dir) -}}
{{- end -}}
{{- if $v.quicInsecure -}}
{{- fail "request-router: quicInsecure=true would render --quic-insecure (QUIC without certificate verification); set quicInsecure=false" -}}
{{- end -}}
{{- if $v.enableDevPeerForwarding -}}
{{- fail "request-router: enableDevPeerForwarding=true would render --enable-dev-peer-forwarding (unauthenticated peer traffic); set enableDevPeerForwarding=false" -}}
{{- end -}}
{{- if $v.allowInsecureRemoteWatchHttp -}}
{{- fail "request-router: allowInsecureRemoteWatchHttp=true would render --allow-insecure-remote-watch-http (plaintext watch); set allowInsecureRemoteWatchHttp=false" -}}
{{- end -}}
{{- range $v.extraArgs -}}
{{- $flag := regexReplaceAll "=.*$" . "" -}}
{{- /* The guard and its list on one line, so no line names an insecure flag outside a fail guard. */ -}}
{{- if has $flag (list "--quic-insecure" "--enable-dev-peer-forwarding" "--allow-insecure-remote-watch-http" "--insecure-skip-tls-verify" "--insecure") -}}{{- fail (printf "request-router: extraArgs may not contain the insecure flag %s; remove it from extraArgs" $flag) -}}{{- end -}}
{{- if has $flag (list "--listen-addr" "--reverse-tunnel-listen-addr" "--backend-connectivity" "--advertised-hostname-template" "--grpc-pylon-dial-addr" "--reverse-tunnel-pylon-dial-addr" "--tls-cert-path" "--tls-key-path") -}}
{{- fail (printf "request-router: extraArgs may not repeat %s, which the chart renders; set it through router.* / tls.* values instead" $flag) -}}
{{- end -}}
{{- end -}}
{{- range $v.extraEnv -}}
{{- if hasPrefix "STARGATE_QUIC_INSECURE" (upper .name) -}}
{{- fail "request-router: extraEnv may not set STARGATE_QUIC_INSECURE (QUIC without certificate verification); remove it from extraEnv" -}}
{{- end -}}
{{- if has .name (list "POD_NAME" "POD_NAMESPACE") -}}
{{- fail (printf "request-router: extraEnv may not set %s, which the chart sets: it is the pod identity the router advertises" .name) -}}
{{- end -}}
{{- end -}}
{{- if not (regexMatch "^https://[^/:]+(:[0-9]+)?$" $v.router.grpcDialAddress) -}}
{{- fail (printf "request-router: router.grpcDialAddress must be https://host:port (workers dial gRPC in plaintext otherwise); got %q" $v.router.grpcDialAddress) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9.\\-\\[\\]:{}_]+:[0-9]+$" $v.router.quicDialAddress) -}}
{{- fail (printf "request-router: router.quicDialAddress must be host:port without a scheme; got %q" $v.router.quicDialAddress) -}}
{{- end -}}
{{- if not (hasPrefix "{pod_name}." $v.router.advertisedHostnameTemplate) -}}
{{- fail (printf "request-router: router.advertisedHostnameTemplate must start with \"{pod_name}.\" (one one-label wildcard in the Certificate covers every replica); got %q" $v.router.advertisedHostnameTemplate) -}}
{{- end -}}
{{- if not (has $v.workload.kind (list "StatefulSet" "Deployment")) -}}
{{- fail (printf "request-router: unknown workload.kind %q; set workload.kind to StatefulSet or Deployment" (toString $v.workload.kind)) -}}
{{- end -}}
{{- if and (eq $v.workload.kind "Deployment") (gt (int $v.workload.replicas) 1) -}}
{{- fail (printf "request-router: workload.kind=Deployment runs exactly one pod (its pods get generated names, so two could not each be reached by the name they advertise); set workload.replicas=1, or workload.kind=StatefulSet for %v replicas" $v.workload.replicas) -}}
{{- end -}}
{{- if and (eq $v.workload.kind "Deployment") $v.autoscaling.enabled -}}
{{- fail "request-router: autoscaling needs workload.kind=StatefulSet (a Deployment runs exactly one pod with a stable identity); set autoscaling.enabled=false or workload.kind=StatefulSet" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail (printf "request-router: autoscaling.minReplicas (%v) exceeds autoscaling.maxReplicas (%v)" $v.autoscaling.minReplicas $v.autoscaling.maxReplicas) -}}
{{- end -}}
{{- if and (not (contains "{pod_name}" $v.router.quicDialAddress)) (gt (int (include "request-router.podCount" .)) 1) -}}
{{- fail (printf "request-router: router.quicDialAddress %q is the same for every pod, so a worker that names one pod may reach another; use a per-pod address such as {pod_name}.%s.{namespace}.svc.cluster.local:50072, or run one pod" $v.router.quicDialAddress (include "request-router.headlessName" .)) -}}
{{- end -}}
{{- if and $v.workerRoutes.grpc.enabled (ne $v.workerRoutes.grpc.kind "GRPCRoute") -}}
{{- fail (printf "request-router: workerRoutes.grpc.kind=%s would put worker gRPC on a plain TCP listener (cleartext); set workerRoutes.grpc.kind=GRPCRoute (HTTPS listener, TLS at the Gateway, h2c to 50071)" (toString $v.workerRoutes.grpc.kind)) -}}
{{- end -}}
{{- if $v.workerRoutes.quic.enabled -}}
{{- $_ := include "request-router.udpRouteApiVersion" . -}}
{{- end -}}
{{- end -}}

{{/* Pod template shared by the StatefulSet and the Deployment. */}}
{{- define "request-router.podTemplate" -}}
metadata:
  labels:
    {{- include "request-router.podLabels" . | nindent 4 }}
  {{- with .Values.workload.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- if eq .Values.workload.kind "Deployment" }}
  # The Deployment's one pod gets the stable identity <name>-0: with the headless Service as
  # its subdomain it resolves as <name>-0.<headless>.<namespace>.svc like a StatefulSet pod.
  hostname: {{ include "request-router.fullname" . }}-0
  subdomain: {{ include "request-router.headlessName" . }}
  {{- end }}
  serviceAccountName: {{ include "request-router.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: router
      image: {{ include "request-router.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        {{- include "request-router.args" . | nindent 8 }}
      env:
        # The router expands {pod_name}/{namespace} in --advertised-hostname-template from these;
        # Kubernetes expands $(POD_NAME)/$(POD_NAMESPACE) in the per-pod QUIC dial address.
        - name: POD_NAME
          {{- if eq .Values.workload.kind "Deployment" }}
          value: {{ printf "%s-0" (include "request-router.fullname" .) | quote }}
          {{- else }}
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
          {{- end }}
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: grpc
          containerPort: 50071
          protocol: TCP
        - name: quic
          containerPort: 50072
          protocol: UDP
        - name: http
          containerPort: 8000
          protocol: TCP
        - name: metrics
          containerPort: 9090
          protocol: TCP
      # /readyz answers 200 only while the router's TLS identity (certificate and key) is loaded
      # and it is not draining, so a pod joins its Services once it can serve workers over TLS;
      # /healthz answers 200 while the process serves HTTP.
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        periodSeconds: 5
        failureThreshold: 2
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        initialDelaySeconds: 15
        periodSeconds: 20
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: [ALL]
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        # The whole Secret as one directory: tls.crt and tls.key flip together on renewal
        # and the router reloads them in place (no subPath, no env, no checksum annotation).
        - name: tls
          mountPath: {{ trimSuffix "/" .Values.tls.mountPath }}
          readOnly: true
  volumes:
    - name: tls
      secret:
        secretName: {{ .Values.tls.secretName }}
        defaultMode: 0440
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpread }}
  # Spread router pods so one node (or zone) going down takes at most one of them.
  topologySpreadConstraints:
    {{- range . }}
    - topologyKey: {{ .topologyKey }}
      maxSkew: {{ .maxSkew | default 1 }}
      whenUnsatisfiable: {{ .whenUnsatisfiable | default "ScheduleAnyway" }}
      labelSelector:
        matchLabels:
          {{- include "request-router.selectorLabels" $ | nindent 10 }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/* Ports of both Services. */}}
{{- define "request-router.servicePorts" -}}
- name: grpc
  port: 50071
  targetPort: grpc
  protocol: TCP
  # The router's gRPC listener is plaintext HTTP/2; TLS ends at the Gateway in front of it.
  appProtocol: kubernetes.io/h2c
- name: quic
  port: 50072
  targetPort: quic
  protocol: UDP
- name: http
  port: 8000
  targetPort: http
  protocol: TCP
  appProtocol: http
- name: metrics
  port: 9090
  targetPort: metrics
  protocol: TCP
  appProtocol: http
{{- end -}}
