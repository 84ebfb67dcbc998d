{{/* Standard labels. */}}
{{- define "nvcf-admission.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nvcf
app.kubernetes.io/component: admission
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Render-time guards: a binding with no namespace would guard nothing, and Deny must not be
combined with Warn (the API server refuses that pair).
*/}}
{{- define "nvcf-admission.validate" -}}
{{- if not .Values.namespaces -}}
{{- fail "nvcf-admission: namespaces is empty; list the stack's namespaces (values/releases/nvcf-admission.yaml.gotmpl derives them from the environment's namespaces)" -}}
{{- end -}}
{{- if and (has "Deny" .Values.validationActions) (has "Warn" .Values.validationActions) -}}
{{- fail "nvcf-admission: validationActions may not hold both Deny and Warn; use [Deny] (enforce) or [Warn, Audit] (dry run)" -}}
{{- end -}}
{{- end -}}

{{/* The generated patterns as CEL variables (string literals). */}}
{{- define "nvcf-admission.patterns" -}}
{{- $p := .Files.Get "generated/patterns.json" | fromJson -}}
{{- if not (hasKey $p "flagOn") -}}
{{- fail "nvcf-admission: generated/patterns.json is missing or empty; regenerate it (NVCF_ADMISSION_WRITE=1 cargo test -p nvcf-validate --lib admission)" -}}
{{- end -}}
{{- range $k := keys $p | sortAlpha }}
{{- if ne $k "_generated" }}
- name: {{ $k }}
  expression: {{ toJson (index $p $k) | toJson }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The binding of one policy to the stack's namespaces. */}}
{{- define "nvcf-admission.binding" -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ .name }}
  labels:
    {{- include "nvcf-admission.labels" .root | nindent 4 }}
spec:
  policyName: {{ .name }}
  validationActions:
    {{- toYaml .root.Values.validationActions | nindent 4 }}
  matchResources:
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: In
          values:
            {{- toYaml (.root.Values.namespaces | uniq) | nindent 12 }}
{{- end -}}
