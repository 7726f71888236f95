#!/usr/bin/env python3
"""The layers of server/ (docs/architecture.md), checked on the includes.

A file may include the public headers of its own module and of the
modules below it, and its own module's internal headers; nothing else
from server/. Generated protobuf headers count as one module (pb) that
the engine and everything below it must not see. System headers (<...>)
are not checked.

Exit status 0 when every include keeps to the layers, 1 otherwise (each
offending include is printed as file:line: reason).
"""
import os
import re
import sys

# The modules, lowest first: (name, folder under server/, internal headers).
# A module may include the modules before it in this table, never after.
# Modules of the same rank (a tuple of names) do not see each other.
LAYERS = [
    ("core", "core", []),
    ("store", "store", ["store_int.h", "pool.h"]),
    ("expr", "expr", ["expr_int.h"]),
    ("engine/base", "engine/base", []),
    ("engine/net", "engine/net", []),
    ("engine/referral", "engine/referral", ["referral_int.h"]),
    ("engine/runtime", "engine/runtime", ["net_runtime_int.h"]),
    ("engine", "engine", []),
    ("diagram", "diagram", ["diagram_int.h"]),
    ("scheduler", "scheduler", []),
    ("pb", None, []),
    ("handlers", "handlers", ["h_common.h"]),
    ("http", "http", []),
    ("console", "console", ["console_int.h"]),
    ("rpc", "rpc", []),
    ("main", "", []),
]

# Modules that are side by side: neither may include the other.
SIBLINGS = [{"handlers", "http"}]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(server, path):
    """The module a file of server/ belongs to (the deepest folder listed)."""
    rel = os.path.relpath(os.path.dirname(path), server)
    rel = "" if rel == "." else rel
    best = None
    for name, folder, _ in LAYERS:
        if folder is None:
            continue
        if rel == folder or (folder != "" and rel.startswith(folder + "/")) or folder == "":
            if best is None or len(folder) > len(best[1]):
                best = (name, folder)
    return best[0] if best else None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    server = os.path.join(root, "server")
    rank = {name: i for i, (name, _, _) in enumerate(LAYERS)}
    internal = {name: set(hs) for name, _, hs in LAYERS}
    # Every header of server/ and the module that owns it.
    owner = {}
    files = []
    for dirpath, _, names in os.walk(server):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.join(dirpath, n)
                files.append(p)
                if n.endswith(".h"):
                    if n in owner:
                        print(f"{p}: header name {n} is not unique in server/")
                        return 1
                    owner[n] = module_of(server, p)
    problems = []
    for p in sorted(files):
        me = module_of(server, p)
        with open(p, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                base = os.path.basename(inc)
                if inc.endswith(".pb-c.h"):
                    them = "pb"
                elif base in owner:
                    them = owner[base]
                else:
                    continue  # a header of no module of server/ (a library's)
                where = f"{os.path.relpath(p, root)}:{lineno}"
                if them == me:
                    continue
                if base in internal.get(them, ()):
                    problems.append(f"{where}: {inc} is internal to {them}")
                elif rank[them] > rank[me]:
                    problems.append(f"{where}: {me} includes {inc} of {them}, a layer above it")
                elif any(me in s and them in s for s in SIBLINGS):
                    problems.append(f"{where}: {me} includes {inc} of its sibling {them}")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} include(s) break the layers (see docs/architecture.md)")
        return 1
    print(f"{len(files)} files keep to the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
