#!/usr/bin/python3
"""Every file path named in a comment of the C sources or in a Markdown
document must exist.

What is checked: in the comments of every tracked `.c` and `.h` file, and in
the whole text of every tracked `.md` file, each path with a directory part
(`dir/file.ext`, `../dir/file.ext`, `./dir/file.ext`) whose extension is one
of c, h, md, sql, sh, py, proto, js, mjs. A bare file name (`store_rows.c`,
`./run.sh`) is not a path and is not checked: it names a file of the
surrounding folder, or a command the reader writes.

Where a path may resolve, tried in this order; the first that exists wins:

  1. the repository root                 (`server/store/store.h`)
  2. the directory of the naming file    (`../docs/operations.md` from k8s/)
  3. `server/`: the module roots, as the   (`handlers/h_tasks.c`,
     sources name each other's files       `engine/runtime/signals.c`)
  4. `server/store/`: its `migrations/`  (`migrations/0011_inbox.sql`)

Not checked: the files protoc-c generates into the build tree (`*.pb-c.c`,
`*.pb-c.h`) and placeholders (a component holding `NNNN`, e.g.
`migrations/NNNN_name.sql`).

    /usr/bin/python3 tools/check-paths.py     # from anywhere in the checkout

Prints one `file:line: path` line per missing path and exits 1 when there is
any, 0 otherwise. Standard library only.
"""

import os
import re
import subprocess
import sys

EXTENSIONS = ("c", "h", "md", "sql", "sh", "py", "proto", "js", "mjs")
ROOTS = ("", "server", os.path.join("server", "store"))

# A path with at least one directory component, not glued to a longer word,
# URL or path on either side (so "https://host/a/b.md" yields nothing).
PATH_RE = re.compile(
    r"(?<![\w./@:-])"
    r"((?:\.{1,2}/)*(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)+[A-Za-z0-9_][A-Za-z0-9_.-]*"
    r"\.(?:" + "|".join(EXTENSIONS) + r"))"
    r"(?![\w/-])")

# C comments, and the string and character literals that could hide a "/*".
C_TOKEN_RE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["git", "-C", here, "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                         capture_output=True, text=True, check=True)
    return [f for f in out.stdout.split("\0") if f]


def c_comments(text):
    """(first line, text) of each comment of a C file."""
    for m in C_TOKEN_RE.finditer(text):
        t = m.group(0)
        if t.startswith("/*") or t.startswith("//"):
            yield text.count("\n", 0, m.start()) + 1, t


def skipped(path):
    base = os.path.basename(path)
    return base.endswith((".pb-c.c", ".pb-c.h")) or "NNNN" in path


def resolves(root, naming_file, path):
    if path.startswith("./") and "/" not in path[2:]:
        return True  # a bare name after "./": not a path with a directory part
    tried = [os.path.join(root, path), os.path.join(root, os.path.dirname(naming_file), path)]
    tried += [os.path.join(root, r, path) for r in ROOTS if r]
    return any(os.path.isfile(os.path.normpath(t)) for t in tried)


def main():
    root = repo_root()
    missing = []
    for f in tracked_files(root):
        if f.endswith((".c", ".h")):
            kind = "c"
        elif f.endswith(".md"):
            kind = "md"
        else:
            continue
        full = os.path.join(root, f)
        if not os.path.isfile(full):
            continue
        with open(full, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        chunks = c_comments(text) if kind == "c" else [(1, text)]
        for first, chunk in chunks:
            for m in PATH_RE.finditer(chunk):
                path = m.group(1)
                if skipped(path) or resolves(root, f, path):
                    continue
                line = first + chunk.count("\n", 0, m.start())
                missing.append("%s:%d: %s" % (f, line, path))
    for m in missing:
        print(m)
    if missing:
        print("check-paths: %d path(s) named in comments or docs do not exist (rules: %s)"
              % (len(missing), os.path.relpath(__file__, root)), file=sys.stderr)
        return 1
    print("check-paths: every path named in C comments and Markdown exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
