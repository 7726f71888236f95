#!/usr/bin/env bash
# `wfctl definition KEY --svg` and `wfctl show ID --svg` against a running
# workflowd (run by tests/examples/run_example.sh, which passes its address):
# a net whose ids and names hold quotes, '<', '&', backslashes, newlines and
# non-ASCII is deployed, and each diagram must be well-formed XML with an
# <svg> root and one node element per place and transition, found by its
# exact id. The DOT output must name every id too.
set -euo pipefail

ADDR=$1
W=("$WFCTL" --addr "$ADDR" --actor dev)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/def.json" <<'JSON'
{
  "key": "diagram-hostile",
  "name": "Hostile \"names\" <&>\nsecond line",
  "kind": "NET",
  "places": [
    {"id": "start\"q", "name": "Start <here> & \"now\"", "kind": "START"},
    {"id": "a<b&c", "name": "line one\nline two", "kind": "NORMAL"},
    {"id": "back\\slash", "name": "entity &amp; stays text", "kind": "NORMAL"},
    {"id": "café-→-end", "name": "Fin ✓", "kind": "END"}
  ],
  "transitions": [
    {"id": "review\"1", "name": "<b>Review</b>", "trigger": "USER",
     "assignee": {"kind": "USER", "ids": ["bob"]}},
    {"id": "t&lt;2", "name": "\\N node", "trigger": "AUTO", "job_type": "job<&>"},
    {"id": "wait--msg", "trigger": "MSG", "signal_name": "sig\"nal"}
  ],
  "arcs": [
    {"source": "start\"q", "target": "review\"1"},
    {"source": "review\"1", "target": "a<b&c", "weight": 2},
    {"source": "a<b&c", "target": "t&lt;2", "weight": 2},
    {"source": "t&lt;2", "target": "back\\slash", "guard": ".x == \"<&>\""},
    {"source": "t&lt;2", "target": "café-→-end", "is_default": true},
    {"source": "back\\slash", "target": "wait--msg"},
    {"source": "wait--msg", "target": "café-→-end"}
  ]
}
JSON

"${W[@]}" deploy "$WORK/def.json" >/dev/null
"${W[@]}" definition diagram-hostile --svg >"$WORK/def.svg"
"${W[@]}" definition diagram-hostile --dot >"$WORK/def.dot"
id=$("${W[@]}" start diagram-hostile)
"${W[@]}" show "$id" --svg >"$WORK/inst.svg"

/usr/bin/python3 - "$WORK" <<'PY'
import json, sys, xml.etree.ElementTree as ET

work = sys.argv[1]
d = json.load(open(f"{work}/def.json", encoding="utf-8"))
ids = [p["id"] for p in d["places"]] + [t["id"] for t in d["transitions"]]
SVG = "{http://www.w3.org/2000/svg}"

def check(path, overlay):
    root = ET.parse(path).getroot()  # raises on malformed XML
    assert root.tag == SVG + "svg", root.tag
    nodes = {g.get("id"): g for g in root.iter(SVG + "g") if g.get("class") == "node"}
    missing = [i for i in ids if i not in nodes]
    assert not missing, f"{path}: no node for {missing}; nodes: {sorted(nodes)}"
    text = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    assert "<b>Review</b>" in text, text
    if overlay:
        assert "1 token" in text or "enabled" in text, text
    return len(nodes)

n = check(f"{work}/def.svg", False)
check(f"{work}/inst.svg", True)
dot = open(f"{work}/def.dot", encoding="utf-8").read()
assert dot.startswith('digraph "diagram-hostile" {'), dot[:80]
for i in ids:
    quoted = '"' + i.replace("\\", "\\\\").replace('"', '\\"').replace("&lt;", "&amp;lt;") + '"'
    assert quoted + " [id=" + quoted in dot, quoted
print(f"diagram: {n} nodes, every place and transition found by id")
PY
