#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build, run and test the service.
# Does nothing when they are all present already. Needs root (or sudo).
#
#   scripts/install-deps.sh           build + run + test packages
#   scripts/install-deps.sh --check   exit 1 when something is missing
#   scripts/install-deps.sh --list [build]
#                                     print the packages (all, or only those the
#                                     build needs: the Dockerfile's build stage
#                                     must install those; CI checks it)
set -euo pipefail

build_packages=(
    build-essential cmake pkg-config
    libgrpc-dev protobuf-c-compiler libprotobuf-c-dev libprotobuf-dev grpc-proto
    libpq-dev libjansson-dev libjq-dev libonig-dev libmicrohttpd-dev libgraphviz-dev
    libicu-dev libical-dev libssl-dev
)
packages=(
    "${build_packages[@]}"
    # runtime: Graphviz's layout library with its plugins (GetDiagram), as
    # the Dockerfile's runtime stage installs it
    libgvc6
    # tests: Check, a throwaway Postgres, Python client, proto tooling, clang-format,
    # promtool (prometheus) and PyYAML for the alert rules and the dashboard,
    # groff-base and zsh (the wfctl man page and zsh completion are checked with them),
    # chromium (the web console's browser test drives it headless)
    check
    postgresql postgresql-contrib
    protobuf-compiler protobuf-compiler-grpc python3 python3-grpcio python3-protobuf python3-yaml
    valgrind yamllint ca-certificates curl prometheus openssl jq clang libclang-rt-14-dev
    clang-format groff-base zsh chromium
)

if [ "${1:-}" = "--list" ]; then
    case "${2:-}" in
    build) printf '%s\n' "${build_packages[@]}" ;;
    "") printf '%s\n' "${packages[@]}" ;;
    *) echo "install-deps: --list takes nothing or 'build'" >&2; exit 2 ;;
    esac
    exit 0
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)

if [ "${1:-}" = "--check" ]; then
    [ ${#missing[@]} -eq 0 ] || { echo "missing packages: ${missing[*]}" >&2; exit 1; }
    exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-deps: run as root, or install: ${missing[*]}" >&2
        exit 1
    }
    sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
