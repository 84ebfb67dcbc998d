{{/*
provision.sh (contract with the integration test): POSIX sh + the bao CLI only; reads BAO_ADDR,
BAO_TOKEN (optional), BAO_CACERT (optional) from the environment; idempotent; needs no
Kubernetes API. Every parameter below is rendered from the chart's values.
*/}}
{{- define "openbao-issuer.provisionScript" -}}
{{- $p := .Values.pki -}}
{{- $k := .Values.pki.kubernetesAuth -}}
#!/bin/sh
# OpenBao PKI provisioning for the NVCF request router (rendered by charts/openbao-issuer).
#
# Runs as the openbao-pki-provision Job, and by hand or in tests:
#   BAO_ADDR=https://... [BAO_CACERT=ca.pem] [BAO_TOKEN=...] sh provision.sh
#
# Bootstrap run (BAO_TOKEN set, from the one-time Secret {{ .Values.provisioner.bootstrapTokenSecret }}):
#   enables the intermediate mount, imports the operator's intermediate CA (key intermediate.pem of
#   that Secret, made by `nvcf-validate ca init`; OpenBao never generates a root) and the published
#   roots, enables Kubernetes auth and writes the provisioner's own narrow policy and auth role,
#   then everything below.
# Every run ends by checking that OpenBao's CA chain anchors in the published trust bundle
#   (TRUST_BUNDLE_FILE, whose nvcf-trust-bundle-v1 fingerprint is rendered below) and fails,
#   naming both fingerprints, when it does not: workers would refuse every certificate.
# Steady-state run (no BAO_TOKEN): logs in through Kubernetes auth as the Job's ServiceAccount
#   and only re-applies mount TTLs, URLs, the signing role, cert-manager's sign-only policy and
#   auth role. It cannot create mounts or CAs and cannot change its own policy.
#   (PROVISION_STEADY_STATE=1 forces this mode with a given BAO_TOKEN, to test the narrow policy.)
# Running it again changes nothing that is already in place.
set -eu

INT_MOUNT={{ include "openbao-issuer.shq" $p.intermediateMount }}
INT_TTL={{ include "openbao-issuer.shq" $p.intermediateTtl }}
# nvcf-trust-bundle-v1 fingerprint of the published trust bundle (the same PEM as nvcf-pki's).
TRUST_BUNDLE_FINGERPRINT={{ include "openbao-issuer.shq" (include "openbao-issuer.trustBundleFingerprint" .) }}
PUBLIC_ADDR={{ include "openbao-issuer.shq" (trimSuffix "/" .Values.openbao.address) }}
ROLE_NAME={{ include "openbao-issuer.shq" $p.role.name }}
# Identical to role.json in the ConfigMap openbao-pki-role (same template helper).
SIGN_POLICY_NAME={{ include "openbao-issuer.shq" $p.signPolicyName }}
SIGN_POLICY={{ include "openbao-issuer.shq" (include "openbao-issuer.signPolicy" .) }}
AUTH_MOUNT={{ include "openbao-issuer.shq" $k.mount }}
KUBERNETES_HOST={{ include "openbao-issuer.shq" $k.kubernetesHost }}
CM_ROLE={{ include "openbao-issuer.shq" $k.role }}
CM_SA={{ include "openbao-issuer.shq" .Values.clusterIssuer.serviceAccountName }}
CM_NAMESPACE={{ include "openbao-issuer.shq" .Values.certManager.namespace }}
CM_AUDIENCE={{ include "openbao-issuer.shq" (include "openbao-issuer.certManagerAudience" .) }}
CM_TOKEN_TTL={{ include "openbao-issuer.shq" $k.tokenTtl }}
PROV_ROLE={{ include "openbao-issuer.shq" .Values.provisioner.authRole }}
PROV_POLICY_NAME={{ include "openbao-issuer.shq" .Values.provisioner.policyName }}
PROV_SA={{ include "openbao-issuer.shq" .Values.provisioner.serviceAccountName }}
PROV_NAMESPACE={{ include "openbao-issuer.shq" (include "openbao-issuer.openbaoNamespace" .) }}
PROV_AUDIENCE={{ include "openbao-issuer.shq" (include "openbao-issuer.provisionerAudience" .) }}
PROV_POLICY={{ include "openbao-issuer.shq" (include "openbao-issuer.provisionerPolicy" . | trim) }}
SA_TOKEN_FILE="${SA_TOKEN_FILE:-/var/run/secrets/openbao/token}"
KUBERNETES_CA_FILE="${KUBERNETES_CA_FILE:-/var/run/secrets/kubernetes-ca/ca.crt}"
WAIT_SECONDS="${WAIT_SECONDS:-{{ .Values.provisioner.waitSeconds }}}"
TRUST_BUNDLE_FILE="${TRUST_BUNDLE_FILE:-/var/run/nvcf-trust-bundle/ca.crt}"
CA_BUNDLE_FILE="${CA_BUNDLE_FILE:-/var/run/openbao-pki-bootstrap/intermediate.pem}"

log() { printf 'openbao-pki-provision: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v bao >/dev/null 2>&1 || die "the bao CLI is not on PATH"
for t in awk base64 sha256sum sort; do
  command -v "$t" >/dev/null 2>&1 || die "$t is not on PATH (the anchor check needs it)"
done
[ -n "${BAO_ADDR:-}" ] || die "set BAO_ADDR to the OpenBao address (https://...)"
case "$BAO_ADDR" in
  https://*) ;;
  http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*)
    log "WARNING: plaintext loopback address $BAO_ADDR (test servers only)" ;;
  *) die "BAO_ADDR must be https:// (plaintext is accepted only on loopback, for tests); got $BAO_ADDR" ;;
esac

# 1. Wait until OpenBao answers, initialized and unsealed (status exit code 0).
waited=0
until bao status >/dev/null 2>&1; do
  [ "$waited" -lt "$WAIT_SECONDS" ] || die "OpenBao at $BAO_ADDR is not reachable, initialized and unsealed after ${WAIT_SECONDS}s"
  log "waiting for OpenBao at $BAO_ADDR (reachable, initialized, unsealed)"
  sleep 5
  waited=$((waited + 5))
done

# 2. Authenticate.
BOOTSTRAP=false
if [ -n "${BAO_TOKEN:-}" ]; then
  if [ "${PROVISION_STEADY_STATE:-0}" = 1 ]; then
    log "steady-state run with the token from BAO_TOKEN"
  else
    BOOTSTRAP=true
    log "bootstrap run with the token from BAO_TOKEN"
  fi
else
  [ -r "$SA_TOKEN_FILE" ] || die "no BAO_TOKEN and no ServiceAccount token at $SA_TOKEN_FILE; for the first run create the Secret {{ .Values.provisioner.bootstrapTokenSecret }} (key token) with a bootstrap token (docs/stack.md)"
  BAO_TOKEN=$(bao write -field=token "auth/$AUTH_MOUNT/login" role="$PROV_ROLE" jwt=@"$SA_TOKEN_FILE") \
    || die "Kubernetes login as role $PROV_ROLE failed; was the bootstrap run done?"
  export BAO_TOKEN
  log "steady-state run, logged in through auth/$AUTH_MOUNT as role $PROV_ROLE"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

has_ca() { bao read -field=certificate "$1/cert/ca" 2>/dev/null | grep -q 'BEGIN CERTIFICATE'; }

ensure_pki_mount() { # mount description max_ttl
  if bao read "sys/mounts/$1" >/dev/null 2>&1; then
    log "mount $1/ exists"
  elif [ "$BOOTSTRAP" = true ]; then
    bao secrets enable -path="$1" -description="$2" pki >/dev/null
    log "enabled mount $1/"
  else
    die "mount $1/ is missing; do the bootstrap run first (docs/stack.md)"
  fi
  bao secrets tune -max-lease-ttl="$3" "$1/" >/dev/null
}

# SHA-256 (hex) of the DER of each certificate of a PEM file, one per line, in file order.
der_hashes() {
  awk -v d="$tmp/der" '
    /-----BEGIN CERTIFICATE-----/ { n++; f = d "." n; printf "" > f; inside = 1; next }
    /-----END CERTIFICATE-----/ { if (inside) { close(f); print f }; inside = 0; next }
    inside { print > f }' "$1" |
  while read -r f; do base64 -d < "$f" | sha256sum | cut -d' ' -f1; done
}
# nvcf-trust-bundle-v1 of the hashes on stdin (facts.md): sorted, de-duplicated, one per line.
fingerprint() { { echo nvcf-trust-bundle-v1; sort -u; } | sha256sum | sed 's/ .*//; s/^/sha256:/'; }

# 3. The published trust bundle this run anchors to: the rendered file, unchanged.
[ -r "$TRUST_BUNDLE_FILE" ] || die "the published trust bundle $TRUST_BUNDLE_FILE is not readable"
der_hashes "$TRUST_BUNDLE_FILE" > "$tmp/bundle.hashes"
[ -s "$tmp/bundle.hashes" ] || die "the published trust bundle $TRUST_BUNDLE_FILE holds no certificate"
bundle_fp=$(fingerprint < "$tmp/bundle.hashes")
[ "$bundle_fp" = "$TRUST_BUNDLE_FINGERPRINT" ] \
  || die "$TRUST_BUNDLE_FILE has fingerprint $bundle_fp, but the chart rendered $TRUST_BUNDLE_FINGERPRINT"

# 4. The intermediate mount (max TTL tuned: the 768h default would silently cap certificates),
#    and its issuing-certificate and CRL URLs (the public, unauthenticated CA endpoints).
ensure_pki_mount "$INT_MOUNT" "NVCF intermediate CA (router certificates)" "$INT_TTL"
bao write "$INT_MOUNT/config/urls" issuing_certificates="$PUBLIC_ADDR/v1/$INT_MOUNT/ca" \
  crl_distribution_points="$PUBLIC_ADDR/v1/$INT_MOUNT/crl" >/dev/null

# 5. The intermediate CA: the operator's (certificate and key), imported once. The root that
#    signed it stays offline with the operator and is what the trust bundle publishes.
if has_ca "$INT_MOUNT"; then
  log "intermediate CA in $INT_MOUNT/ exists"
elif [ "$BOOTSTRAP" = true ] && [ -r "$CA_BUNDLE_FILE" ]; then
  bao write "$INT_MOUNT/config/ca" pem_bundle=@"$CA_BUNDLE_FILE" >/dev/null
  log "imported the intermediate CA from $CA_BUNDLE_FILE into $INT_MOUNT/"
elif [ "$BOOTSTRAP" = true ]; then
  die "no intermediate CA in $INT_MOUNT/ and none to import at $CA_BUNDLE_FILE: create one with \`nvcf-validate ca init\` and add its intermediate.pem to the Secret {{ .Values.provisioner.bootstrapTokenSecret }} (docs/pki.md)"
else
  die "no intermediate CA in $INT_MOUNT/; do the bootstrap run first (docs/pki.md)"
fi

# 6. The published roots as certificate-only issuers of the mount, so OpenBao links the
#    intermediate to its root and serves the whole chain (bootstrap and rotations only).
if [ "$BOOTSTRAP" = true ]; then
  bao write "$INT_MOUNT/issuers/import/cert" pem_bundle=@"$TRUST_BUNDLE_FILE" >/dev/null
  log "published roots imported as issuers of $INT_MOUNT/"
fi

# 7. The signing role, limited to the router's domains.
# Every parameter as one string, exactly as the provisioner policy pins it.
bao write "$INT_MOUNT/roles/$ROLE_NAME" {{ include "openbao-issuer.roleArgs" . }} >/dev/null
log "role $INT_MOUNT/roles/$ROLE_NAME written"

# 8. cert-manager's policy: only update on <intermediate>/sign/<role>.
bao write "sys/policies/acl/$SIGN_POLICY_NAME" policy="$SIGN_POLICY" >/dev/null
log "policy $SIGN_POLICY_NAME written"

# 9. Kubernetes auth (bootstrap only): method, config, the provisioner's own policy and role.
if [ "$BOOTSTRAP" = true ]; then
  if ! bao read "sys/auth/$AUTH_MOUNT" >/dev/null 2>&1; then
    bao auth enable -path="$AUTH_MOUNT" kubernetes >/dev/null
    log "enabled auth/$AUTH_MOUNT"
  fi
  # TokenReview target. The Job passes the cluster CA (kube-root-ca.crt); without it OpenBao
  # uses its own in-pod CA. A server outside any pod (a test server) gets no config: warn only.
  if [ -r "$KUBERNETES_CA_FILE" ]; then
    bao write "auth/$AUTH_MOUNT/config" kubernetes_host="$KUBERNETES_HOST" \
      kubernetes_ca_cert=@"$KUBERNETES_CA_FILE" >/dev/null
  elif ! bao write "auth/$AUTH_MOUNT/config" kubernetes_host="$KUBERNETES_HOST" >/dev/null 2>"$tmp/config.err"; then
    log "WARNING: auth/$AUTH_MOUNT/config not written (no $KUBERNETES_CA_FILE and OpenBao has no in-pod CA): $(tr '\n' ' ' < "$tmp/config.err")"
  fi
  bao write "sys/policies/acl/$PROV_POLICY_NAME" policy="$PROV_POLICY" >/dev/null
  bao write "auth/$AUTH_MOUNT/role/$PROV_ROLE" bound_service_account_names="$PROV_SA" \
    bound_service_account_namespaces="$PROV_NAMESPACE" audience="$PROV_AUDIENCE" \
    token_policies="$PROV_POLICY_NAME" token_ttl=10m token_max_ttl=10m >/dev/null
  log "auth/$AUTH_MOUNT configured; provisioner role $PROV_ROLE and policy $PROV_POLICY_NAME written"
fi

# 10. cert-manager's auth role: the issuer's ServiceAccount, the ClusterIssuer's audience.
bao write "auth/$AUTH_MOUNT/role/$CM_ROLE" bound_service_account_names="$CM_SA" \
  bound_service_account_namespaces="$CM_NAMESPACE" audience="$CM_AUDIENCE" \
  token_policies="$SIGN_POLICY_NAME" token_ttl="$CM_TOKEN_TTL" token_max_ttl="$CM_TOKEN_TTL" >/dev/null
log "auth role $CM_ROLE bound to $CM_NAMESPACE/$CM_SA (audience $CM_AUDIENCE)"

# 11. OpenBao's CA must anchor in the published trust bundle, or every certificate it signs is
#     refused by workers (UnknownIssuer). The chain OpenBao serves (the default issuer up to its
#     root) must end in a certificate the bundle holds.
bao read -field=certificate "$INT_MOUNT/cert/ca_chain" > "$tmp/chain.pem" 2>"$tmp/chain.err" \
  || die "cannot read $INT_MOUNT/cert/ca_chain: $(tr '\n' ' ' < "$tmp/chain.err")"
der_hashes "$tmp/chain.pem" > "$tmp/chain.hashes"
top=$(tail -n 1 "$tmp/chain.hashes")
[ -n "$top" ] || die "OpenBao serves no CA chain in $INT_MOUNT/"
openbao_fp=$(printf '%s\n' "$top" | fingerprint)
if ! grep -qx "$top" "$tmp/bundle.hashes"; then
  die "CA MISMATCH: OpenBao's CA chain in $INT_MOUNT/ ends in a certificate (fingerprint $openbao_fp as a one-certificate bundle) that the published trust bundle ($TRUST_BUNDLE_FINGERPRINT, $TRUST_BUNDLE_FILE) does not hold; workers would refuse every certificate OpenBao signs (UnknownIssuer). Import an intermediate signed by the published root, or publish the root that signed OpenBao's intermediate as pki.trustBundleFile and apply (docs/pki.md)"
fi
log "OpenBao's CA chain ($(wc -l < "$tmp/chain.hashes") certificate(s)) anchors in the published trust bundle $TRUST_BUNDLE_FINGERPRINT"

# 12. The root that anchors OpenBao's chain (one of the published bundle's certificates).
log "provisioning complete; the root CA anchoring OpenBao's chain:"
awk '/-----BEGIN CERTIFICATE-----/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$tmp/chain.pem"
{{- end -}}
