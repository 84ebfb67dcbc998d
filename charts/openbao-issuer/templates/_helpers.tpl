{{/* Chart name. */}}
{{- define "openbao-issuer.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Standard labels. */}}
{{- define "openbao-issuer.labels" -}}
app.kubernetes.io/name: {{ include "openbao-issuer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nvcf
app.kubernetes.io/component: pki-issuer
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Namespace of OpenBao. */}}
{{- define "openbao-issuer.openbaoNamespace" -}}
{{- default .Release.Namespace .Values.openbao.namespace -}}
{{- end -}}

{{/* The signing path cert-manager uses: <intermediate mount>/sign/<role>. */}}
{{- define "openbao-issuer.signPath" -}}
{{- printf "%s/sign/%s" .Values.pki.intermediateMount .Values.pki.role.name -}}
{{- end -}}

{{/* Token audience cert-manager requests for a ClusterIssuer (vault://<issuer>). */}}
{{- define "openbao-issuer.certManagerAudience" -}}
{{- printf "vault://%s" .Values.clusterIssuer.name -}}
{{- end -}}

{{/* Token audience of the provisioning Job's projected ServiceAccount token. */}}
{{- define "openbao-issuer.provisionerAudience" -}}
{{- printf "openbao://%s/%s" (include "openbao-issuer.openbaoNamespace" .) .Values.provisioner.authRole -}}
{{- end -}}

{{/* Quote a string for POSIX sh (single quotes). */}}
{{- define "openbao-issuer.shq" -}}
{{- printf "'%s'" (replace "'" "'\\''" (toString .)) -}}
{{- end -}}

{{/* Escape a string for an HCL double-quoted string. */}}
{{- define "openbao-issuer.hclq" -}}
{{- printf "\"%s\"" (toString . | replace "\\" "\\\\" | replace "\"" "\\\"" | replace "\n" "\\n") -}}
{{- end -}}

{{/*
The signing role's parameters, as JSON. The single source for both role.json (read by the
validator) and provision.sh (which writes exactly this JSON to OpenBao), so they cannot drift.
*/}}
{{- define "openbao-issuer.roleJson" -}}
{{- $r := .Values.pki.role -}}
{{- dict
  "allowed_domains" $r.allowedDomains
  "allow_subdomains" $r.allowSubdomains
  "allow_bare_domains" $r.allowBareDomains
  "allow_wildcard_certificates" $r.allowWildcardCertificates
  "allow_glob_domains" false
  "allow_any_name" false
  "allow_localhost" false
  "allow_ip_sans" false
  "enforce_hostnames" true
  "server_flag" true
  "client_flag" false
  "code_signing_flag" false
  "email_protection_flag" false
  "key_type" $r.keyType
  "key_bits" $r.keyBits
  "require_cn" $r.requireCn
  "max_ttl" $r.maxTtl
  | toJson -}}
{{- end -}}

{{/*
The role's parameters as OpenBao receives them: one string per parameter (lists joined with
commas), so the provisioner policy can pin each to exactly this value.
*/}}
{{- define "openbao-issuer.roleParams" -}}
{{- $out := dict -}}
{{- range $k, $v := (include "openbao-issuer.roleJson" . | fromJson) -}}
{{- if kindIs "slice" $v -}}
{{- $_ := set $out $k (join "," $v) -}}
{{- else -}}
{{- $_ := set $out $k (toString $v) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* `key=value` arguments for `bao write`, shell-quoted. */}}
{{- define "openbao-issuer.roleArgs" -}}
{{- $args := list -}}
{{- range $k, $v := (include "openbao-issuer.roleParams" . | fromJson) -}}
{{- $args = append $args (include "openbao-issuer.shq" (printf "%s=%s" $k $v)) -}}
{{- end -}}
{{- join " " $args -}}
{{- end -}}

{{/* cert-manager's policy: sign through the one role, nothing else. One line on purpose: the
provisioner policy pins this exact text. */}}
{{- define "openbao-issuer.signPolicy" -}}
{{- printf "path \"%s\" { capabilities = [\"update\"] }" (include "openbao-issuer.signPath" .) -}}
{{- end -}}

{{/*
The provisioner's steady-state policy: read what the bootstrap run created, re-apply the role,
cert-manager's policy and auth role - with their parameters pinned to the rendered values (the
role included: the steady-state identity cannot widen what the role signs). It
cannot enable mounts, generate or sign CAs, change auth configuration or its own policy.
*/}}
{{- define "openbao-issuer.provisionerPolicy" -}}
{{- $p := .Values.pki -}}
{{- $k := .Values.pki.kubernetesAuth -}}
{{- with $p.intermediateMount }}
path "sys/mounts/{{ . }}" { capabilities = ["read"] }
path "sys/mounts/{{ . }}/tune" { capabilities = ["read", "update"] }
path "{{ . }}/cert/ca" { capabilities = ["read"] }
path "{{ . }}/cert/ca_chain" { capabilities = ["read"] }
path "{{ . }}/config/urls" { capabilities = ["read", "update"] }
{{- end }}
path "{{ $p.intermediateMount }}/roles/{{ $p.role.name }}" {
  capabilities = ["create", "read", "update"]
  allowed_parameters = {
{{- range $k, $v := (include "openbao-issuer.roleParams" . | fromJson) }}
    {{ include "openbao-issuer.hclq" $k }} = [{{ include "openbao-issuer.hclq" $v }}]
{{- end }}
  }
}
path "sys/policies/acl/{{ $p.signPolicyName }}" {
  capabilities = ["create", "read", "update"]
  allowed_parameters = { "policy" = [{{ include "openbao-issuer.hclq" (include "openbao-issuer.signPolicy" .) }}] }
}
path "auth/{{ $k.mount }}/role/{{ $k.role }}" {
  capabilities = ["create", "read", "update"]
  allowed_parameters = {
    "bound_service_account_names" = [{{ include "openbao-issuer.hclq" .Values.clusterIssuer.serviceAccountName }}]
    "bound_service_account_namespaces" = [{{ include "openbao-issuer.hclq" .Values.certManager.namespace }}]
    "audience" = [{{ include "openbao-issuer.hclq" (include "openbao-issuer.certManagerAudience" .) }}]
    "token_policies" = [{{ include "openbao-issuer.hclq" $p.signPolicyName }}]
    "token_ttl" = [{{ include "openbao-issuer.hclq" $k.tokenTtl }}]
    "token_max_ttl" = [{{ include "openbao-issuer.hclq" $k.tokenTtl }}]
  }
}
{{- end -}}

{{/* Image reference pinned by tag (and digest when given). */}}
{{- define "openbao-issuer.image" -}}
{{- $img := printf "%s:%s" .Values.provisioner.image.repository .Values.provisioner.image.tag -}}
{{- if .Values.provisioner.image.digest -}}{{- $img = printf "%s@%s" $img .Values.provisioner.image.digest -}}{{- end -}}
{{- $img -}}
{{- end -}}

{{/* Render-time guards: each message names the value to set. */}}
{{- define "openbao-issuer.validate" -}}
{{- if not (hasPrefix "https://" .Values.openbao.address) -}}
{{- fail (printf "openbao-issuer: openbao.address must be https:// (OpenBao runs with TLS; a plaintext Vault issuer leaks tokens and certificates); got %q" .Values.openbao.address) -}}
{{- end -}}
{{- if not (regexFindAll (include "openbao-issuer.certBlockRegex" .) .Values.trustBundle.pem -1) -}}
{{- fail "openbao-issuer: trustBundle.pem holds no CERTIFICATE block; set it to the published trust bundle (the environment's pki.trustBundleFile, the root that signed the intermediate OpenBao imports; docs/pki.md)" -}}
{{- end -}}
{{- if contains "PRIVATE KEY" .Values.trustBundle.pem -}}
{{- fail "openbao-issuer: trustBundle.pem holds a private key; it must be the public root certificate(s) only" -}}
{{- end -}}
{{- if not .Values.pki.role.allowedDomains -}}
{{- fail "openbao-issuer: pki.role.allowedDomains is empty; set it to the router's domains (e.g. request-router.nvcf.svc, request-router-headless.nvcf.svc.cluster.local, workers.<domain>)" -}}
{{- end -}}
{{- range .Values.pki.role.allowedDomains -}}
{{- if or (contains "*" .) (eq . "svc") (eq . "cluster.local") (eq . "svc.cluster.local") -}}
{{- fail (printf "openbao-issuer: pki.role.allowedDomains entry %q is too broad (no globs, no bare cluster suffixes); list the router's own domains" .) -}}
{{- end -}}
{{- end -}}
{{- if and (eq .Values.pki.role.keyType "ec") (not (has (int .Values.pki.role.keyBits) (list 256 384))) -}}
{{- fail (printf "openbao-issuer: pki.role.keyBits=%v does not fit keyType=ec; set pki.role.keyBits to 256 or 384" .Values.pki.role.keyBits) -}}
{{- end -}}
{{- if and (eq .Values.pki.role.keyType "rsa") (lt (int .Values.pki.role.keyBits) 2048) -}}
{{- fail (printf "openbao-issuer: pki.role.keyBits=%v does not fit keyType=rsa; set pki.role.keyBits to 2048, 3072 or 4096" .Values.pki.role.keyBits) -}}
{{- end -}}
{{- end -}}

{{/* A PEM CERTIFICATE block (base64 body only). */}}
{{- define "openbao-issuer.certBlockRegex" -}}
-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----
{{- end -}}

{{/* The published trust bundle (trustBundle.pem) as clean PEM: only its CERTIFICATE blocks. */}}
{{- define "openbao-issuer.trustBundle.pem" -}}
{{- $out := list -}}
{{- range regexFindAll (include "openbao-issuer.certBlockRegex" .) .Values.trustBundle.pem -1 -}}
{{- $out = append $out (printf "%s\n" (trim .)) -}}
{{- end -}}
{{- join "" $out -}}
{{- end -}}

{{/* nvcf-trust-bundle-v1 fingerprint of trustBundle.pem (facts.md), computed as nvcf-pki does. */}}
{{- define "openbao-issuer.trustBundleFingerprint" -}}
{{- $hashes := list -}}
{{- range regexFindAll (include "openbao-issuer.certBlockRegex" .) .Values.trustBundle.pem -1 -}}
{{- $body := regexReplaceAll "-----(BEGIN|END) CERTIFICATE-----|\\s" . "" -}}
{{- $hashes = append $hashes (sha256sum (b64dec $body)) -}}
{{- end -}}
{{- $hashes = $hashes | uniq | sortAlpha -}}
{{- $text := printf "nvcf-trust-bundle-v1\n%s\n" (join "\n" $hashes) -}}
{{- printf "sha256:%s" (sha256sum $text) -}}
{{- end -}}
