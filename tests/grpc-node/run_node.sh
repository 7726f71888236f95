#!/usr/bin/env bash
# workflowd through a Node client of default settings: installs
# @grpc/grpc-js and @grpc/proto-loader (npm ci, pinned by package-lock.json)
# when missing, then runs default_client_test.js against a workflowd of its
# own.
#
#   tests/grpc-node/run_node.sh WORKFLOWD PROTO_DIR WORKDIR memory|pg
#
# Exit 77 (skipped) only when node is not installed (scripts/install-deps.sh
# installs it), or with pg without WF_TEST_PG_DSN.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
    echo "skipped: node is not installed (scripts/install-deps.sh installs nodejs and npm)"
    exit 77
fi
# One install at a time: the memory and Postgres runs may start together.
flock "$HERE/package.json" bash -c '
    [[ -d $1/node_modules/@grpc/grpc-js && -d $1/node_modules/@grpc/proto-loader ]] ||
        npm --prefix "$1" ci --no-audit --no-fund' _ "$HERE"
mkdir -p "$3"
exec node "$HERE/default_client_test.js" --server "$1" --proto "$2" --work "$3" --store "$4"
