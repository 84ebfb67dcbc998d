{{/* Chart name. */}}
{{- define "nvcf-pki.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Standard labels. */}}
{{- define "nvcf-pki.labels" -}}
app.kubernetes.io/name: {{ include "nvcf-pki.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nvcf
app.kubernetes.io/component: pki
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Namespace of the router. */}}
{{- define "nvcf-pki.routerNamespace" -}}
{{- default .Release.Namespace .Values.router.namespace -}}
{{- end -}}

{{/*
Render-time guards. Every refused combination fails with a message naming the value to set.
Included by every template so no partial render is possible.
*/}}
{{- define "nvcf-pki.validate" -}}
{{- $mode := .Values.mode -}}
{{- if not (has $mode (list "managed" "issuer" "secret")) -}}
{{- fail (printf "nvcf-pki: unknown mode %q; set mode to one of managed, issuer, secret" (toString $mode)) -}}
{{- end -}}
{{- if and (eq $mode "managed") (not .Values.managed.clusterIssuer) -}}
{{- fail "nvcf-pki: mode=managed needs managed.clusterIssuer (the OpenBao ClusterIssuer rendered by openbao-issuer, default openbao)" -}}
{{- end -}}
{{- if and (eq $mode "issuer") (not .Values.issuer.issuerRef.name) -}}
{{- fail "nvcf-pki: mode=issuer needs the customer's issuer; set issuer.issuerRef.name (and issuer.issuerRef.kind/group)" -}}
{{- end -}}
{{- if not (hasPrefix "https://" .Values.router.grpcDialAddress) -}}
{{- fail (printf "nvcf-pki: router.grpcDialAddress must be https://host:port (workers dial gRPC in plaintext otherwise); got %q" .Values.router.grpcDialAddress) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9.\\-\\[\\]:{}_]+:[0-9]+$" .Values.router.quicDialAddress) -}}
{{- fail (printf "nvcf-pki: router.quicDialAddress must be host:port without a scheme; got %q" .Values.router.quicDialAddress) -}}
{{- end -}}
{{- if not (hasPrefix "{pod_name}." .Values.router.advertisedHostnameTemplate) -}}
{{- fail (printf "nvcf-pki: router.advertisedHostnameTemplate must start with \"{pod_name}.\" so one one-label wildcard covers every replica; got %q" .Values.router.advertisedHostnameTemplate) -}}
{{- end -}}
{{- if ne .Values.workerProfile.trustMode "bundle" -}}
{{- fail (printf "nvcf-pki: workerProfile.trustMode must be \"bundle\" (workers trust only the published bundle); got %q" (toString .Values.workerProfile.trustMode)) -}}
{{- end -}}
{{- if .Values.workerProfile.insecureSkipVerify -}}
{{- fail "nvcf-pki: workerProfile.insecureSkipVerify=true turns off worker TLS verification; set workerProfile.insecureSkipVerify=false" -}}
{{- end -}}
{{- $pem := required "nvcf-pki: trustBundle.pem is empty; set it to the PEM of the CA certificate(s) workers must trust (mode managed: the exported OpenBao root, see docs/stack.md)" .Values.trustBundle.pem -}}
{{- $rest := regexReplaceAll (include "nvcf-pki.certBlockRegex" .) $pem "" -}}
{{- if contains "-----BEGIN" $rest -}}
{{- fail (printf "nvcf-pki: trustBundle.pem may contain only CERTIFICATE blocks; found %q - remove private keys and any other PEM block" (regexFind "-----BEGIN [A-Z0-9 ]+-----" $rest)) -}}
{{- end -}}
{{- if not (regexFindAll (include "nvcf-pki.certBlockRegex" .) $pem -1) -}}
{{- fail "nvcf-pki: trustBundle.pem holds no CERTIFICATE block; set it to the PEM of the CA certificate(s) workers must trust" -}}
{{- end -}}
{{- end -}}

{{/* A PEM CERTIFICATE block (base64 body only). */}}
{{- define "nvcf-pki.certBlockRegex" -}}
-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----
{{- end -}}

{{/* The trust bundle as clean PEM: only the CERTIFICATE blocks, one after the other. */}}
{{- define "nvcf-pki.trustBundle.pem" -}}
{{- $out := list -}}
{{- range regexFindAll (include "nvcf-pki.certBlockRegex" .) .Values.trustBundle.pem -1 -}}
{{- $out = append $out (printf "%s\n" (trim .)) -}}
{{- end -}}
{{- join "" $out -}}
{{- end -}}

{{/*
nvcf-trust-bundle-v1 fingerprint (facts.md): sha256 of each certificate's DER, lowercase hex,
deduplicated and sorted; text "nvcf-trust-bundle-v1\n" + one hash per line, each ending in "\n";
sha256 of that text, prefixed "sha256:". sprig's sha256sum hashes the bytes of its string
argument, so hashing the b64dec'd body hashes the DER.
*/}}
{{- define "nvcf-pki.trustBundle.fingerprint" -}}
{{- $hashes := list -}}
{{- range regexFindAll (include "nvcf-pki.certBlockRegex" .) .Values.trustBundle.pem -1 -}}
{{- $body := regexReplaceAll "-----(BEGIN|END) CERTIFICATE-----|\\s" . "" -}}
{{- $hashes = append $hashes (sha256sum (b64dec $body)) -}}
{{- end -}}
{{- $hashes = $hashes | uniq | sortAlpha -}}
{{- $text := printf "nvcf-trust-bundle-v1\n%s\n" (join "\n" $hashes) -}}
{{- printf "sha256:%s" (sha256sum $text) -}}
{{- end -}}

{{/* Host part of host:port (brackets of an IPv6 literal removed). */}}
{{- define "nvcf-pki.hostOf" -}}
{{- regexReplaceAll ":[0-9]+$" . "" | trimPrefix "[" | trimSuffix "]" -}}
{{- end -}}

{{/*
dnsNames of the router Certificate, as a JSON list: the stable Service names, the one-label
wildcard covering every advertised per-pod name, the QUIC dial host when it is a DNS name, and
certificate.extraDnsNames. The gRPC dial host is not here: TLS for it ends at the Gateway.
*/}}
{{- define "nvcf-pki.dnsNames" -}}
{{- $ns := include "nvcf-pki.routerNamespace" . -}}
{{- $r := .Values.router -}}
{{- $names := list -}}
{{- range list $r.serviceName -}}
{{- $names = append $names (printf "%s.%s.svc" . $ns) -}}
{{- $names = append $names (printf "%s.%s.svc.%s" . $ns $r.clusterDomain) -}}
{{- end -}}
{{- $advertised := $r.advertisedHostnameTemplate | replace "{pod_name}" "*" | replace "{namespace}" $ns -}}
{{- $names = append $names $advertised -}}
{{- /* A per-pod dial host ({pod_name}.…) is covered like the advertised names: one-label wildcard. */ -}}
{{- $quicHost := include "nvcf-pki.hostOf" $r.quicDialAddress | replace "{pod_name}" "*" | replace "{namespace}" $ns -}}
{{- if not (regexMatch "^[0-9.]+$|:" $quicHost) -}}
{{- $names = append $names $quicHost -}}
{{- end -}}
{{- $names = concat $names .Values.certificate.extraDnsNames -}}
{{- $names | uniq | toJson -}}
{{- end -}}
