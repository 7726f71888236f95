#!/usr/bin/python3
"""Fail when an element of a .proto file has no leading comment.

Every service, RPC, message, field, oneof, enum and enum value of the
checked files must carry a non-empty leading comment (a comment block directly
above it, without a blank line in between; a trailing comment on the same
line does not count). The file itself must open with a comment block before
`syntax`.

Usage (from anywhere; paths are relative to the repository root):
    /usr/bin/python3 tools/check_proto_comments.py [FILE.proto ...]
Default file: proto/workflow/v1/workflow.proto. The vendored google/rpc
files are not checked by default.

Needs protoc (override with $PROTOC) and python3-protobuf
(google.protobuf.descriptor_pb2). Exit status: 0 when everything is
documented, 1 when something is not (one line per element), 2 on usage or
protoc errors.
"""

import os
import shutil
import subprocess
import sys
import tempfile

try:
    from google.protobuf import descriptor_pb2
except ImportError:  # pragma: no cover - environment problem
    sys.stderr.write(
        "check_proto_comments: python3-protobuf is missing "
        "(apt-get install python3-protobuf; run with /usr/bin/python3)\n")
    sys.exit(2)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(REPO_ROOT, "proto")
DEFAULT_FILES = ["proto/workflow/v1/workflow.proto"]

# Field numbers of the descriptor.proto elements used in SourceCodeInfo paths.
FILE_MESSAGE_TYPE = 4
FILE_ENUM_TYPE = 5
FILE_SERVICE = 6
FILE_SYNTAX = 12
MESSAGE_FIELD = 2
MESSAGE_NESTED_TYPE = 3
MESSAGE_ENUM_TYPE = 4
MESSAGE_ONEOF_DECL = 8
ENUM_VALUE = 2
SERVICE_METHOD = 2


def has_text(comment):
    """True when a comment has something besides whitespace and slashes."""
    return bool(comment.replace("/", "").replace("*", "").strip())


def build_descriptor_set(proto_files):
    """Run protoc and return the FileDescriptorSet of proto_files."""
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc:
        sys.stderr.write("check_proto_comments: protoc not found\n")
        sys.exit(2)
    includes = ["-I" + PROTO_ROOT]
    if os.path.isdir("/usr/include/google/protobuf"):
        includes.append("-I/usr/include")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "fds.binpb")
        cmd = [protoc, *includes, "--include_source_info",
               "--descriptor_set_out=" + out, *proto_files]
        result = subprocess.run(cmd, cwd=PROTO_ROOT, check=False)
        if result.returncode != 0:
            sys.stderr.write("check_proto_comments: protoc failed: %s\n"
                             % " ".join(cmd))
            sys.exit(2)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as handle:
            fds.ParseFromString(handle.read())
        return fds


class Checker:
    """Walks one FileDescriptorProto and records undocumented elements."""

    def __init__(self, file_proto):
        self.file = file_proto
        self.locations = {}
        for loc in file_proto.source_code_info.location:
            self.locations.setdefault(tuple(loc.path), loc)
        self.missing = []

    def require(self, path, kind, name):
        loc = self.locations.get(tuple(path))
        if loc is None:
            # Elements without a location are synthesized by protoc (for
            # example map entry messages); callers skip those.
            self.missing.append((0, kind, name, "no source location"))
            return
        if not has_text(loc.leading_comments):
            line = loc.span[0] + 1 if loc.span else 0
            self.missing.append((line, kind, name, "no leading comment"))

    def check(self):
        syntax = self.locations.get((FILE_SYNTAX,))
        if syntax is None or not (
                has_text(syntax.leading_comments)
                or any(has_text(c) for c in syntax.leading_detached_comments)):
            self.missing.append((1, "file", self.file.name,
                                 "no file-level comment before `syntax`"))
        prefix = self.file.package
        for i, service in enumerate(self.file.service):
            path = [FILE_SERVICE, i]
            name = "%s.%s" % (prefix, service.name)
            self.require(path, "service", name)
            for j, method in enumerate(service.method):
                self.require(path + [SERVICE_METHOD, j], "rpc",
                             "%s.%s" % (name, method.name))
        for i, message in enumerate(self.file.message_type):
            self.check_message(message, [FILE_MESSAGE_TYPE, i],
                               "%s.%s" % (prefix, message.name))
        for i, enum in enumerate(self.file.enum_type):
            self.check_enum(enum, [FILE_ENUM_TYPE, i],
                            "%s.%s" % (prefix, enum.name))
        return sorted(self.missing)

    def check_message(self, message, path, name):
        if message.options.map_entry:
            return  # synthesized for map<K, V> fields; the field is checked
        self.require(path, "message", name)
        for i, field in enumerate(message.field):
            self.require(path + [MESSAGE_FIELD, i], "field",
                         "%s.%s" % (name, field.name))
        synthetic = {f.oneof_index for f in message.field
                     if f.proto3_optional and f.HasField("oneof_index")}
        for i, oneof in enumerate(message.oneof_decl):
            if i in synthetic:
                continue  # proto3 `optional`: the field itself is checked
            self.require(path + [MESSAGE_ONEOF_DECL, i], "oneof",
                         "%s.%s" % (name, oneof.name))
        for i, nested in enumerate(message.nested_type):
            self.check_message(nested, path + [MESSAGE_NESTED_TYPE, i],
                               "%s.%s" % (name, nested.name))
        for i, enum in enumerate(message.enum_type):
            self.check_enum(enum, path + [MESSAGE_ENUM_TYPE, i],
                            "%s.%s" % (name, enum.name))

    def check_enum(self, enum, path, name):
        self.require(path, "enum", name)
        for i, value in enumerate(enum.value):
            self.require(path + [ENUM_VALUE, i], "enum value",
                         "%s.%s" % (name, value.name))


def to_proto_relative(arg):
    """Map a command-line path to a path relative to proto/."""
    if os.path.isabs(arg):
        absolute = arg
    else:
        absolute = os.path.join(REPO_ROOT, arg)
        if not os.path.exists(absolute):
            absolute = os.path.abspath(arg)
    rel = os.path.relpath(absolute, PROTO_ROOT)
    if rel.startswith(".."):
        sys.stderr.write("check_proto_comments: %s is not under %s\n"
                         % (arg, PROTO_ROOT))
        sys.exit(2)
    return rel


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    files = [to_proto_relative(a) for a in (argv or DEFAULT_FILES)]
    fds = build_descriptor_set(files)
    total = 0
    for file_proto in fds.file:
        if file_proto.name not in files:
            continue
        for line, kind, name, why in Checker(file_proto).check():
            total += 1
            print("proto/%s:%d: %s %s: %s"
                  % (file_proto.name, line, kind, name, why))
    if total:
        print("check_proto_comments: %d undocumented element(s)" % total)
        return 1
    print("check_proto_comments: OK, every element of %s is documented"
          % ", ".join("proto/" + f for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
