#!/usr/bin/env python3
"""Fail on an import cycle between the files of a crate.

Usage: module_cycles.py CRATES_DIR     check every CRATES_DIR/*/src
       module_cycles.py --self-test    check the fixtures beside this script

For each crate root (src/lib.rs, src/main.rs, src/bin/*.rs) the module tree is read by following
`mod x;` declarations, so every file gets its module path. Every path that names a module of the
same crate (`use crate::a::{b, c}`, `use super::x`, `self::`, `super::super::`, a child module's
name, a name brought in by `use` that is a module, and the same forms inline in code, such as
`crate::a::b::f(`) becomes an edge from the file it is written in to the deepest file that
defines the named module: an item of `a/b.rs` points at `a/b.rs`, an item of `a/mod.rs` at
`a/mod.rs`. An inline `mod x { }` is part of its file. `mod x;` is a declaration, not an import;
a parent that uses its child (`use x::Y`, `pub use x::*`) has an edge to it, so a child reaching
back with `super::` closes a cycle.

A name that a module only brings in with `use` (a re-export such as `pub use types::Item` in
lib.rs) leads on to the file that defines it: `use crate::Item` is an edge to types.rs, not to
lib.rs, so a crate root's re-exports do not make every file depend on the root (the `pub use`
itself is an edge from lib.rs to types.rs). A glob import binds no names this way.

Only paths are read: a method called on a value of another module's type is no edge (its type
was named somewhere, or came from a call that was). Paths inside `macro_rules!` bodies count for
the file that defines the macro.

Test-only code is left out: any item under `#[cfg(test)]` (the usual `mod tests`, a `tests.rs`
declared with it, a test-only `use` or helper). Non-test code cannot name a test-only module
(the crate would not build without `--cfg test`), so such a module can never sit in a cycle with
shipped code; counting its imports would only add false cycles, since a test of `a` may freely
use `b` while `b` uses `a`. Comments (doc links included) and string literals are not code.

Prints every strongly connected component of more than one file with the edges that form it
(file:lines -> file), then `N cycles`; exits 1 when N > 0. Standard library only.
"""

import io
import os
import re
import sys

IDENT_START = re.compile(r"[A-Za-z_]")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")


class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind = kind  # "id", "str", "p" (punctuation; `::` is one token)
        self.text = text
        self.line = line

    def __repr__(self):
        return f"{self.kind}:{self.text}@{self.line}"


def tokenize(src):
    """Identifiers, strings and punctuation with line numbers; comments, chars, numbers and
    lifetimes are dropped."""
    toks = []
    i, n, line = 0, len(src), 1

    def skip_string(j, hashes):
        # j is just past the opening quote; returns (index past the closing quote, contents)
        start = j
        while j < n:
            c = src[j]
            if c == "\\" and hashes < 0:
                j += 2
                continue
            if c == '"' and (hashes < 0 or src.startswith("#" * hashes, j + 1)):
                value = src[start:j]
                return j + 1 + max(hashes, 0), value
            j += 1
        return n, src[start:]

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif src.startswith("//", i):
            while i < n and src[i] != "\n":
                i += 1
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += src[i] == "\n"
                    i += 1
        elif c == '"':
            end, value = skip_string(i + 1, -1)
            toks.append(Tok("str", value, line))
            line += src.count("\n", i, end)
            i = end
        elif c == "'":
            if i + 1 < n and src[i + 1] == "\\":  # escaped char literal
                j = i + 2
                while j < n and src[j] != "'":
                    j += 1 + (src[j] == "\\")
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":  # plain char literal
                i += 3
            else:  # lifetime or label
                i += 1
                while i < n and IDENT_CHAR.match(src[i]):
                    i += 1
        elif IDENT_START.match(c):
            j = i
            while j < n and IDENT_CHAR.match(src[j]):
                j += 1
            word = src[i:j]
            if word in ("r", "br", "cr") and j < n and src[j] in '"#':
                k = j
                while k < n and src[k] == "#":
                    k += 1
                if k < n and src[k] == '"':  # raw string
                    end, value = skip_string(k + 1, k - j)
                    toks.append(Tok("str", value, line))
                    line += src.count("\n", i, end)
                    i = end
                    continue
                if word == "r" and src[j] == "#":  # raw identifier r#name
                    k = j + 1
                    while k < n and IDENT_CHAR.match(src[k]):
                        k += 1
                    toks.append(Tok("id", src[j + 1 : k], line))
                    i = k
                    continue
            if word in ("b", "c") and j < n and src[j] == '"':
                end, value = skip_string(j + 1, -1)
                toks.append(Tok("str", value, line))
                line += src.count("\n", i, end)
                i = end
                continue
            if word == "b" and j < n and src[j] == "'":
                k = j + 1
                while k < n and src[k] != "'":
                    k += 1 + (src[k] == "\\")
                i = k + 1
                continue
            toks.append(Tok("id", word, line))
            i = j
        elif c.isdigit():
            while i < n and IDENT_CHAR.match(src[i]):
                i += 1
        elif src.startswith("::", i):
            toks.append(Tok("p", "::", line))
            i += 2
        else:
            toks.append(Tok("p", c, line))
            i += 1
    return toks


OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def match_close(toks, i):
    """Index of the bracket closing toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind == "p" and t.text in OPEN:
            depth += 1
        elif t.kind == "p" and t.text in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def item_end(toks, i):
    """Index just past the item (or field, or statement) starting at toks[i]."""
    j = i
    while j < len(toks):
        t = toks[j]
        if t.kind == "p":
            if t.text == "{":
                return match_close(toks, j) + 1
            if t.text in "([":
                j = match_close(toks, j) + 1
                continue
            if t.text in ";,":
                return j + 1
            if t.text in CLOSE:
                return j
        j += 1
    return j


def is_test_only(attr):
    """`cfg(test)` or `cfg(all(..., test, ...))`: the item exists only in test builds."""
    if attr == "cfg(test)":
        return True
    m = re.fullmatch(r"cfg\(all\((.*)\)\)", attr)
    return bool(m) and "test" in [a.strip() for a in m.group(1).split(",")]


class Scope:
    """A module whose code is being read: its path from the crate root and where its `mod x;`
    children live."""

    def __init__(self, path, child_dir, close):
        self.path = path
        self.child_dir = child_dir
        self.close = close  # token index of the `}` ending an inline module, None for a file


class FileFacts:
    def __init__(self):
        self.decls = []  # (module path, file) of `mod x;` children found
        self.inline = []  # module paths of inline modules
        self.refs = []  # (scope path, segments, line, alias name or None)
        self.missing = []  # (line, name) of `mod x;` without a file


def parse_use_tree(toks, i, prefix, leaves):
    """Reads one use tree at toks[i]; appends (segments, alias, line) leaves; returns next index."""
    segs = list(prefix)
    if toks[i].text == "::":
        segs.append("::")  # `use ::name` names an external crate
        i += 1
    while i < len(toks):
        t = toks[i]
        if t.text == "{":
            i += 1
            while i < len(toks) and toks[i].text != "}":
                at = i
                i = parse_use_tree(toks, i, segs, leaves)
                if i < len(toks) and toks[i].text == ",":
                    i += 1
                elif i == at:
                    i += 1  # not a use tree after all
            return i + 1
        if t.text == "*":
            leaves.append((segs, None, t.line))
            return i + 1
        if t.kind != "id":
            return i
        segs.append(t.text)
        line = t.line
        i += 1
        if i < len(toks) and toks[i].text == "::":
            i += 1
            continue
        alias = segs[-1] if segs[-1] != "self" else (segs[-2] if len(segs) > 1 else None)
        if i + 1 < len(toks) and toks[i].text == "as":
            alias = toks[i + 1].text
            i += 2
        leaves.append((segs, alias, line))
        return i
    return i


def read_file_facts(path, mod_path, child_dir):
    with open(path, encoding="utf-8") as f:
        toks = tokenize(f.read())
    facts = FileFacts()
    scopes = [Scope(mod_path, child_dir, None)]
    attrs = []
    i = 0
    while i < len(toks):
        t = toks[i]
        scope = scopes[-1]
        if scope.close is not None and i == scope.close:
            scopes.pop()
            i += 1
            continue
        if t.text == "#" and i + 1 < len(toks):
            inner = toks[i + 1].text == "!"
            open_at = i + 2 if inner else i + 1
            if toks[open_at].text == "[":
                close = match_close(toks, open_at)
                text = "".join(
                    f'"{x.text}"' if x.kind == "str" else x.text for x in toks[open_at + 1 : close]
                )
                if inner and is_test_only(text) and len(scopes) == 1:
                    return facts  # the whole file is test-only
                if not inner:
                    attrs.append(text)
                i = close + 1
                continue
        if attrs and any(is_test_only(a) for a in attrs):
            attrs = []
            i = item_end(toks, i)
            continue
        if t.kind == "id" and t.text == "mod" and i + 2 < len(toks) and toks[i + 1].kind == "id":
            name = toks[i + 1].text
            after = toks[i + 2].text
            child_path = scope.path + [name]
            if after == ";":
                explicit = [a for a in attrs if a.startswith("path=")]
                if explicit:
                    base = os.path.dirname(path) if len(scopes) == 1 else scope.child_dir
                    candidates = [os.path.join(base, explicit[0][len("path=") :].strip('"'))]
                else:
                    candidates = [
                        os.path.join(scope.child_dir, name + ".rs"),
                        os.path.join(scope.child_dir, name, "mod.rs"),
                    ]
                found = [c for c in candidates if os.path.isfile(c)]
                if found:
                    facts.decls.append((child_path, found[0]))
                else:
                    facts.missing.append((t.line, name))
                attrs = []
                i += 3
                continue
            if after == "{":
                facts.inline.append(child_path)
                close = match_close(toks, i + 2)
                scopes.append(Scope(child_path, os.path.join(scope.child_dir, name), close))
                attrs = []
                i += 3
                continue
        attrs = []
        # `use<'a>` after `impl Trait +` is a capture list, not an import.
        if t.kind == "id" and t.text == "use" and i + 1 < len(toks) and toks[i + 1].text != "<":
            leaves = []
            j = i + 1
            while j < len(toks) and toks[j].text != ";":
                j = parse_use_tree(toks, j, [], leaves)
                if j < len(toks) and toks[j].text not in (";",):
                    j += 1  # something unexpected; move on
            for segs, alias, line in leaves:
                facts.refs.append((scope.path, segs, line, alias))
            i = j + 1
            continue
        # A path in code: `crate::`, `$crate::`, `self::`, `super::`, or `name::` at a path start.
        if (
            t.kind == "id"
            and i + 1 < len(toks)
            and toks[i + 1].text == "::"
            and i + 2 < len(toks)
            and toks[i + 2].kind == "id"
            and not (i > 0 and toks[i - 1].text in ("::", "."))
        ):
            segs = [t.text]
            j = i + 1
            while j + 1 < len(toks) and toks[j].text == "::" and toks[j + 1].kind == "id":
                segs.append(toks[j + 1].text)
                j += 2
            facts.refs.append((scope.path, segs, t.line, None))
            i = j
            continue
        i += 1
    return facts


class Crate:
    def __init__(self, root_file):
        self.root_file = root_file
        self.module_file = {}  # module path tuple -> file defining it
        self.facts = {}  # file -> FileFacts
        self.missing = []
        self._bindings = None
        self._load(root_file, [], os.path.dirname(root_file))

    def _load(self, path, mod_path, child_dir):
        if path in self.facts:
            return
        facts = read_file_facts(path, mod_path, child_dir)
        self.facts[path] = facts
        self.module_file[tuple(mod_path)] = path
        for inline in facts.inline:
            self.module_file.setdefault(tuple(inline), path)
        self.missing += [(path, line, name) for line, name in facts.missing]
        for child_path, child_file in facts.decls:
            base = os.path.basename(child_file)
            is_mod_rs = base == "mod.rs"
            child_dir = (
                os.path.dirname(child_file) if is_mod_rs else os.path.splitext(child_file)[0]
            )
            self._load(child_file, child_path, child_dir)

    def bindings(self):
        """{(module path, name): (module path, segments)}: the names that `use` binds."""
        if self._bindings is None:
            self._bindings = {}
            for facts in self.facts.values():
                for scope, segs, _line, alias in facts.refs:
                    if alias is not None:
                        self._bindings.setdefault((tuple(scope), alias), (scope, segs))
        return self._bindings

    def resolve(self, scope, segs, depth=0):
        """The module that `segs`, written in module `scope`, leads to, and whether the path names
        that module itself rather than an item in it; None when it leaves the crate. A name that
        a module only re-exports (`pub use b::Item` in `a`, then `crate::a::Item`) leads on to
        the module defining it, so a crate root's re-exports are not what its files depend on."""
        if not segs or segs[0] == "::" or depth > 16:
            return None
        head, rest = segs[0], segs[1:]
        if head in ("crate", "$crate"):
            base = []
        elif head == "self":
            base = list(scope)
        elif head == "super":
            base = list(scope)
            while True:
                if not base:
                    return None
                base = base[:-1]
                if rest and rest[0] == "super":
                    rest = rest[1:]
                else:
                    break
        elif tuple(scope + [head]) in self.module_file:
            base = list(scope) + [head]
        elif (tuple(scope), head) in self.bindings():
            # A name brought in by `use`: a module (`use crate::a; a::b::f()`) leads on; an
            # item (`use crate::a::Thing; Thing::new()`) was counted at its `use`.
            bound = self.resolve(*self.bindings()[(tuple(scope), head)], depth + 1)
            if bound is None or not bound[1]:
                return None
            base = list(bound[0])
        else:
            return None
        while rest:
            seg, rest = rest[0], rest[1:]
            if seg == "self":
                continue
            if tuple(base + [seg]) in self.module_file:
                base.append(seg)
                continue
            bound = self.bindings().get((tuple(base), seg))
            if bound is not None:
                target = self.resolve(*bound, depth + 1)
                if target is not None:
                    if target[1]:  # a re-exported module: go on inside it
                        base = list(target[0])
                        continue
                    return target[0], False
            return base, False
        return base, True

    def edges(self):
        """{(from file, to file): [lines]}"""
        out = {}
        for path, facts in self.facts.items():
            for scope, segs, line, _alias in facts.refs:
                resolved = self.resolve(scope, segs)
                if resolved is None:
                    continue
                to = self.module_file[tuple(resolved[0])]
                if to != path:
                    out.setdefault((path, to), []).append(line)
        return out


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; returns components with more than one node."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(succ[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return comps


def crate_roots(crates_dir):
    roots = []
    for name in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, name, "src")
        if not os.path.isdir(src):
            continue
        for root in ("lib.rs", "main.rs"):
            if os.path.isfile(os.path.join(src, root)):
                roots.append((src, os.path.join(src, root)))
        bin_dir = os.path.join(src, "bin")
        if os.path.isdir(bin_dir):
            for entry in sorted(os.listdir(bin_dir)):
                full = os.path.join(bin_dir, entry)
                if entry.endswith(".rs"):
                    roots.append((src, full))
                elif os.path.isfile(os.path.join(full, "main.rs")):
                    roots.append((src, os.path.join(full, "main.rs")))
    return roots


def find_cycles(crates_dir):
    """[(src dir, root file, [files], {(from, to): [lines]})], [(file, line, name)] missing."""
    cycles, missing = [], []
    for src, root in crate_roots(crates_dir):
        crate = Crate(root)
        missing += crate.missing
        edges = crate.edges()
        for comp in strongly_connected(crate.facts.keys(), edges):
            members = set(comp)
            inner = {e: lines for e, lines in edges.items() if e[0] in members and e[1] in members}
            cycles.append((src, root, comp, inner))
    return cycles, missing


def report(crates_dir, out):
    cycles, missing = find_cycles(crates_dir)
    for path, line, name in missing:
        print(f"warning: {path}:{line}: no file for `mod {name};`", file=sys.stderr)
    for src, root, comp, inner in cycles:
        rel = lambda p: os.path.relpath(p, src)  # noqa: E731
        print(f"{src} ({os.path.basename(root)}): cycle of {len(comp)} files", file=out)
        for (a, b), lines in sorted(inner.items()):
            shown = ",".join(str(x) for x in sorted(set(lines)))
            print(f"  {rel(a)}:{shown} -> {rel(b)}", file=out)
    print(f"{len(cycles)} cycles", file=out)
    return len(cycles)


# The fixtures: each file's cycles as sets of paths relative to the fixture's crates directory.
FIXTURE_EXPECTED = {
    "with_cycles": [
        # nested braces one way, `super::super::` inline the other
        {"demo/src/p.rs", "demo/src/x/y.rs"},
        # a parent using its child, the child reaching back with `super::`
        {"demo/src/m/mod.rs", "demo/src/m/n.rs"},
        # `pub use`, an inline `crate::` path, a glob
        {"demo/src/q.rs", "demo/src/r.rs", "demo/src/s.rs"},
        # an inline `mod inner { }` belongs to its file; a module brought in by `use` then used
        {"demo/src/t.rs", "demo/src/u.rs"},
        # the same in a binary crate's tree
        {"tool/src/main.rs", "tool/src/cli.rs"},
    ],
    "without_cycles": [],
}

# Lines the report on `with_cycles` must print: edges with the lines that make them.
FIXTURE_REPORT_LINES = [
    "  p.rs:4 -> x/y.rs",
    "  x/y.rs:5 -> p.rs",
    "  u.rs:2,6 -> t.rs",
    "  m/mod.rs:7 -> m/n.rs",
    "5 cycles",
]


def self_test():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_cycles_fixtures")
    failed = 0
    for fixture, expected in FIXTURE_EXPECTED.items():
        crates_dir = os.path.join(here, fixture)
        cycles, missing = find_cycles(crates_dir)
        got = sorted(sorted(os.path.relpath(p, crates_dir) for p in comp) for _, _, comp, _ in cycles)
        want = sorted(sorted(c) for c in expected)
        if got != want or missing:
            failed += 1
            print(f"self-test {fixture}: FAILED\n  want {want}\n  got  {got}\n  missing {missing}")
        else:
            print(f"self-test {fixture}: ok ({len(got)} cycles found as expected)")
    # The report names the lines of each edge, and its count decides the exit status.
    text = io.StringIO()
    count = report(os.path.join(here, "with_cycles"), text)
    for line in FIXTURE_REPORT_LINES:
        if line not in text.getvalue().splitlines():
            failed += 1
            print(f"self-test: the report lacks {line!r}:\n{text.getvalue()}")
    if count != len(FIXTURE_EXPECTED["with_cycles"]):
        failed += 1
        print(f"self-test: the report counted {count} cycles in with_cycles")
    if report(os.path.join(here, "without_cycles"), io.StringIO()) != 0:
        failed += 1
        print("self-test: the report found a cycle in without_cycles")
    print(f"self-test: {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    return 1 if report(argv[0], sys.stdout) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
