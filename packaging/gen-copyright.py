#!/usr/bin/env python3
"""Write debian/copyright (DEP-5) for the ringdl binary package to stdout.

Usage: gen-copyright.py METADATA.json LINKED.txt LICENSES_DIR

METADATA.json is `cargo metadata --format-version 1 --filter-platform HOST`; it gives each crate's
licence and authors. LINKED.txt lists "name version" of the crates that are compiled into the
release binary (`cargo tree -e normal,no-proc-macro --prefix none`): cargo metadata's resolve
graph alone unifies features across dev-dependencies (it would list `ring`, which only the tests'
rcgen pulls in) and includes proc-macros, which run at compile time and are not linked.
Crates are grouped by their licence expression, one Files paragraph per expression.
"""
import json
import re
import sys
from collections import defaultdict

meta = json.load(open(sys.argv[1]))
linked = set()
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) >= 2:
        linked.add((parts[0], parts[1].lstrip("v")))
lic_dir = sys.argv[3]

pkgs = {(p["name"], p["version"]): p for p in meta["packages"]}
root_id = meta["resolve"]["root"]
root = next(p for p in meta["packages"] if p["id"] == root_id)

ID = r"[A-Za-z0-9.+-]+"


def dep5(expr):
    """SPDX expression -> (DEP-5 License value, comment or None, set of licence ids)."""
    ids = set(re.findall(ID, expr)) - {"AND", "OR", "WITH"}
    if "(" not in expr:
        return expr.replace(" OR ", " or ").replace(" AND ", " and "), None, ids
    # DEP-5 has no parentheses: list every licence conjunctively (a superset of the
    # obligations) and keep the exact SPDX expression in a comment.
    return " and ".join(sorted(ids)), "SPDX expression from the crate metadata: " + expr, ids


# What a crate's own LICENSE file says beyond its SPDX metadata.
NOTES = {
    "ring": "ring's own code is under ISC; code taken from BoringSSL is under Apache-2.0 or ISC"
    " (its LICENSE and LICENSE-BoringSSL files; each source file names its licence at the top),"
    " and a polyfill from once_cell is under Apache-2.0 or MIT.",
}

groups = defaultdict(list)
for key in sorted(linked):
    if key == (root["name"], root["version"]):
        continue
    p = pkgs.get(key)
    if p is None:
        sys.exit("gen-copyright: %s %s is linked but not in cargo metadata" % key)
    if not p.get("license"):
        sys.exit("gen-copyright: crate %s %s has no SPDX licence in its metadata" % key)
    expr = p["license"]
    if "(" not in expr and " AND " not in expr:
        # "MIT OR Apache-2.0" and "Apache-2.0 OR MIT" are one group.
        expr = " OR ".join(sorted(expr.split(" OR ")))
    groups[expr].append(p)

out = []
w = out.append
w("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
w("Upstream-Name: ringdl")
w("Upstream-Contact: ringdl maintainers <maintainers@users.noreply.a-seed-f968c223.example>")
w("Comment: ringdl is a Rust program; /usr/bin/ringdl statically links the crates listed below")
w(" (the dependency graph of the release binary, from `cargo metadata` and `cargo tree`), plus the")
w(" Rust standard library (MIT or Apache-2.0). The Files patterns name each crate's source as")
w(" `cargo vendor` would lay it out (vendor/NAME-VERSION/).")
w("")
w("Files: *")
w("Copyright: the ringdl authors")
lic, _, used = dep5(root["license"])
w("License: " + lic)
w("")
all_ids = set(used)
for expr in sorted(groups):
    crates = groups[expr]
    lic, comment, ids = dep5(expr)
    all_ids |= ids
    files = ["vendor/%s-%s/*" % (p["name"], p["version"]) for p in crates]
    w("Files: " + files[0])
    for f in files[1:]:
        w(" " + f)
    holders = []
    for p in crates:
        authors = ", ".join(p.get("authors") or []) or "the %s authors" % p["name"]
        holders.append("%s %s: %s" % (p["name"], p["version"], authors))
    w("Copyright: " + holders[0])
    for h in holders[1:]:
        w(" " + h)
    w("License: " + lic)
    notes = [NOTES[p["name"]] for p in crates if p["name"] in NOTES]
    if comment or notes:
        w("Comment: " + " ".join(([comment + "."] if comment else []) + notes))
    w("")

for lid in sorted(all_ids):
    w("License: " + lid)
    if lid == "Apache-2.0":
        w(" On Debian systems, the complete text of the Apache License, Version 2.0 can be")
        w(" found in /usr/share/common-licenses/Apache-2.0.")
    else:
        try:
            text = open("%s/%s" % (lic_dir, lid)).read().rstrip("\n")
        except FileNotFoundError:
            sys.exit("gen-copyright: no licence text for %s in %s" % (lid, lic_dir))
        for line in text.split("\n"):
            line = line.rstrip()
            w(" " + line if line else " .")
    w("")

sys.stdout.write("\n".join(out).rstrip("\n") + "\n")
