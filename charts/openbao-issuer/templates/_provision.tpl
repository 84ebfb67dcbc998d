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
# Bootstrap run (BAO_TOKEN set, e.g. from the one-time Secret {{ .Values.provisioner.bootstrapTokenSecret }}):
#   enables the mounts, generates root + intermediate, enables Kubernetes auth and writes the
#   provisioner's own narrow policy and auth role, then everything below.
# Steady-state run (no BAO_TOKEN): logs in through Kubernetes auth as the Job's ServiceAccount
#   and only re-applies mount TTLs, URLs, the signing role, cert-manager's sign-only policy and
#   auth role. It cannot create mounts or CAs and cannot change its own policy.
#   (PROVISION_STEADY_STATE=1 forces this mode with a given BAO_TOKEN, to test the narrow policy.)
# Running it again changes nothing that is already in place.
set -eu

ROOT_MOUNT={{ include "openbao-issuer.shq" $p.rootMount }}
INT_MOUNT={{ include "openbao-issuer.shq" $p.intermediateMount }}
ROOT_CN={{ include "openbao-issuer.shq" $p.rootCommonName }}
INT_CN={{ include "openbao-issuer.shq" $p.intermediateCommonName }}
ROOT_TTL={{ include "openbao-issuer.shq" $p.rootTtl }}
INT_TTL={{ include "openbao-issuer.shq" $p.intermediateTtl }}
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

log() { printf 'openbao-pki-provision: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v bao >/dev/null 2>&1 || die "the bao CLI is not on PATH"
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

# 3. Mounts (mount max TTLs tuned: the 768h default would silently cap certificates).
ensure_pki_mount "$ROOT_MOUNT" "NVCF root CA" "$ROOT_TTL"
ensure_pki_mount "$INT_MOUNT" "NVCF intermediate CA (router certificates)" "$INT_TTL"

# 4. Issuing-certificate and CRL URLs (the public, unauthenticated CA endpoints), before the
#    CAs are generated so their certificates carry them.
for m in "$ROOT_MOUNT" "$INT_MOUNT"; do
  bao write "$m/config/urls" issuing_certificates="$PUBLIC_ADDR/v1/$m/ca" \
    crl_distribution_points="$PUBLIC_ADDR/v1/$m/crl" >/dev/null
done

# 5. Root CA.
if has_ca "$ROOT_MOUNT"; then
  log "root CA in $ROOT_MOUNT/ exists"
elif [ "$BOOTSTRAP" = true ]; then
  bao write "$ROOT_MOUNT/root/generate/internal" common_name="$ROOT_CN" \
    key_type=ec key_bits=384 ttl="$ROOT_TTL" issuer_name=root >/dev/null
  log "generated the root CA in $ROOT_MOUNT/"
else
  die "no root CA in $ROOT_MOUNT/; do the bootstrap run first (docs/stack.md)"
fi

# 6. Intermediate CA: CSR in the intermediate mount, signed by the root, set-signed.
if has_ca "$INT_MOUNT"; then
  log "intermediate CA in $INT_MOUNT/ exists"
elif [ "$BOOTSTRAP" = true ]; then
  bao write -field=csr "$INT_MOUNT/intermediate/generate/internal" common_name="$INT_CN" \
    key_type=ec key_bits=256 > "$tmp/intermediate.csr"
  bao write -field=certificate "$ROOT_MOUNT/root/sign-intermediate" csr=@"$tmp/intermediate.csr" \
    format=pem_bundle ttl="$INT_TTL" > "$tmp/intermediate.pem"
  bao write "$INT_MOUNT/intermediate/set-signed" certificate=@"$tmp/intermediate.pem" >/dev/null
  log "generated the intermediate CA in $INT_MOUNT/, signed by $ROOT_MOUNT/"
else
  die "no intermediate CA in $INT_MOUNT/; do the bootstrap run first (docs/stack.md)"
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

# 11. The public root for the worker trust bundle (nvcf-pki trustBundle.pem, docs/stack.md).
log "provisioning complete; the root CA to publish as the trust bundle:"
bao read -field=certificate "$ROOT_MOUNT/cert/ca"
echo
{{- end -}}
