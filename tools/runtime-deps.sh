#!/usr/bin/env bash
# Checks that the runtime stage of the Dockerfile installs every shared
# library the given binaries load, without Docker: each library that ldd
# resolves here is mapped to its Debian package (dpkg -S), and that package
# must be one of the packages the last stage's `apt-get install` names, or one
# of their dependencies (apt-cache depends --recurse). Listed packages that no
# binary loads are reported as a note, not an error.
#
# Usage: tools/runtime-deps.sh [--dockerfile FILE] BINARY...
#   e.g. tools/runtime-deps.sh build/server/workflowd build/client/wfctl
# Needs dpkg, apt-cache (with package lists: run apt-get update once) and ldd.
# Exit status: 0 when covered, 1 when a library is missing or unresolved,
# 2 for a usage error.
set -euo pipefail

dockerfile=Dockerfile
if [ "${1:-}" = "--dockerfile" ]; then
    dockerfile=$2
    shift 2
fi
[ $# -gt 0 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ -f "$dockerfile" ] || { echo "runtime-deps: no $dockerfile" >&2; exit 2; }

# Packages named by `apt-get install` in the last stage (continuation lines
# joined; words up to the next && that do not start with '-').
listed=$(awk '
    /^[[:space:]]*FROM[[:space:]]/ { text = "" }
    { line = $0; sub(/\\[[:space:]]*$/, "", line); text = text " " line }
    END { print text }
' "$dockerfile" | grep -o 'apt-get install[^&]*' | tr ' ' '\n' |
    grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vx -e apt-get -e install | sort -u)
[ -n "$listed" ] || { echo "runtime-deps: no apt-get install in the last stage of $dockerfile" >&2; exit 1; }

# shellcheck disable=SC2086 # one word per package
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances $listed 2>/dev/null | grep -v '^[[:space:]<]' | sort -u)
[ -n "$closure" ] || { echo "runtime-deps: apt-cache knows none of: $listed (run apt-get update)" >&2; exit 1; }

status=0
libs=""
for bin in "$@"; do
    [ -x "$bin" ] || { echo "runtime-deps: $bin is not an executable" >&2; exit 2; }
    out=$(ldd "$bin")
    if grep -q 'not found' <<<"$out"; then
        echo "runtime-deps: $bin: unresolved libraries:" >&2
        grep 'not found' <<<"$out" >&2
        status=1
    fi
    libs+=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$out")$'\n'
done
libs=$(sed '/^$/d' <<<"$libs" | sort -u)

# Each library under the names dpkg may know it by (merged /usr, symlinks);
# one dpkg -S call for all of them (each call reads the whole file database).
candidates() { local r; r=$(readlink -f "$1"); printf '%s\n' "$1" "$r" "${1#/usr}" "/usr$1" "${r#/usr}" "/usr$r"; }
owners=$(for lib in $libs; do candidates "$lib"; done | sort -u | xargs dpkg -S 2>/dev/null || true)

needed=""
for lib in $libs; do
    pkg=""
    for c in $(candidates "$lib"); do
        pkg=$(awk -v f="$c" '{ p = $0; sub(/^[^ ]+ /, "", p) } p == f { sub(/:.*/, "", $1); print $1; exit }' <<<"$owners")
        [ -n "$pkg" ] && break
    done
    if [ -z "$pkg" ]; then
        echo "runtime-deps: $lib belongs to no Debian package" >&2
        status=1
        continue
    fi
    needed+="$pkg"$'\n'
    if ! grep -qx "$pkg" <<<"$closure"; then
        echo "runtime-deps: $lib (package $pkg) is loaded, but the runtime stage does not install it" >&2
        status=1
    fi
done
needed=$(sort -u <<<"$needed" | sed '/^$/d')

echo "runtime stage installs:" $listed
echo "binaries load libraries of:" $needed
for pkg in $listed; do
    [ "$pkg" = ca-certificates ] && continue
    grep -qx "$pkg" <<<"$needed" ||
        echo "note: $pkg is installed by the runtime stage but no binary loads it (yet)"
done
[ "$status" -eq 0 ] && echo "runtime-deps: OK, every library is provided"
exit "$status"
