#!/usr/bin/env bash
# Checks that every C source of the project is formatted as .clang-format
# says (Debian 12's clang-format, 14).
#
#   tools/check-format.sh         list each file that differs; exit 1 if any
#   tools/check-format.sh --diff  also print what clang-format would change
#   tools/check-format.sh --fix   format those files in place
#
# The files: the tracked *.c and *.h under common/ server/ client/ tests/ fuzz/
# bench/ (every file in those folders when this is not a git checkout).
# CLANG_FORMAT names another binary. Exit status: 0 when every file is
# formatted (or was fixed), 1 when some file is not, 2 for a usage error or
# a missing clang-format.
set -euo pipefail

mode=check
case "${1:-}" in
"") ;;
--diff) mode=diff ;;
--fix) mode=fix ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "check-format: unknown argument: $1" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null 2>&1 ||
    { echo "check-format: $cf not found (Debian: apt-get install clang-format)" >&2; exit 2; }
[ -f .clang-format ] || { echo "check-format: .clang-format is missing" >&2; exit 2; }

dirs=()
for d in common server client tests fuzz bench; do
    [ -d "$d" ] && dirs+=("$d")
done
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- "${dirs[@]/%//*.c}" "${dirs[@]/%//*.h}" | sort)
else
    mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) | sort)
fi
[ "${#files[@]}" -gt 0 ] || { echo "check-format: no C sources found" >&2; exit 2; }

if [ "$mode" = fix ]; then
    "$cf" -i --style=file -- "${files[@]}"
    echo "check-format: formatted ${#files[@]} files"
    exit 0
fi

bad=0
for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
        echo "not formatted: $f"
        [ "$mode" = diff ] && { "$cf" --style=file "$f" | diff -u "$f" - || true; }
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "check-format: $bad of ${#files[@]} files differ from .clang-format ($("$cf" --version));" \
        "run tools/check-format.sh --fix" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted"
