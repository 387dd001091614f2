#!/usr/bin/python3
"""Check that every relative link and image path in the docs resolves.

    check_links.py --root DIR [FILE.md ...]

Without FILEs it checks DIR/README.md and DIR/docs/*.md. For each Markdown link or image
(`[text](target)`, `![alt](target)`, `[id]: target`, and `href=`/`src=` in inline HTML) whose
target has no URL scheme, the target path, relative to the file that names it (or to DIR when
it starts with `/`), must be an existing file or directory. A `#anchor` must name a heading of the
target Markdown file (or of the same file for a bare `#anchor`), by GitHub's rule: the heading's
text lower-cased, every character that is not a letter, mark, digit, connector, space or hyphen
dropped, spaces turned into hyphens, and `-1`, `-2`, ... added to repeated headings; explicit
`<a id="...">` / `<a name="...">` anchors count too. An anchor on a file that is not Markdown is
not checked.

Fenced code blocks, code spans and HTML comments are skipped: what they show is not a link.
External targets (http:, https:, mailto:, ...) are not fetched.

Prints one line per broken target, `FILE:LINE: broken link|image 'TARGET': why`, then a
summary. Exit 0 when every target resolves, 1 when any does not, 2 for bad usage.
"""
import argparse
import os
import re
import sys
import unicodedata
import urllib.parse

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
# `](target)` or `](target "title")`, target optionally in <...>: the link or image that ends there.
INLINE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ATTR = re.compile(r"<(img|a|source)\s[^>]*?\b(src|href)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def strip_code_spans(line):
    """The line with every code span (`x`, ``x``) blanked out (same length, so columns hold)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "`":
            j = i
            while j < len(line) and line[j] == "`":
                j += 1
            ticks = line[i:j]
            end = line.find(ticks, j)
            while end != -1 and end + len(ticks) < len(line) and line[end + len(ticks)] == "`":
                end = line.find(ticks, end + len(ticks) + 1)
            if end == -1:
                out.append(line[i:j])
                i = j
                continue
            out.append(" " * (end + len(ticks) - i))
            i = end + len(ticks)
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def prose_lines(text):
    """(line number, text) of every line outside fenced code, with code spans and HTML comments
    blanked."""
    in_fence = None
    in_comment = False
    for number, raw in enumerate(text.splitlines(), 1):
        if in_fence:
            m = FENCE.match(raw)
            if m and m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence) and not raw.strip()[len(m.group(1)):].strip():
                in_fence = None
            continue
        m = FENCE.match(raw)
        if m and not in_comment:
            in_fence = m.group(1)
            continue
        line = raw
        # HTML comments, possibly spanning lines.
        out = []
        i = 0
        while i < len(line):
            if in_comment:
                end = line.find("-->", i)
                if end == -1:
                    i = len(line)
                else:
                    i = end + 3
                    in_comment = False
            else:
                start = line.find("<!--", i)
                if start == -1:
                    out.append(line[i:])
                    break
                out.append(line[i:start])
                i = start + 4
                in_comment = True
        yield number, strip_code_spans("".join(out))


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    """Every anchor a Markdown file defines."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    in_fence = None
    for raw in text.splitlines():
        m = FENCE.match(raw)
        if in_fence:
            if m and m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence):
                in_fence = None
            continue
        if m:
            in_fence = m.group(1)
            continue
        h = HEADING.match(raw)
        if h:
            base = slug(h.group(2) or "")
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for a in HTML_ANCHOR.findall(raw):
            found.add(a)
    _anchor_cache[path] = found
    return found


def targets(text):
    """(line, kind, target) of every link and image in a Markdown text."""
    for number, line in prose_lines(text):
        for m in INLINE.finditer(line):
            yield number, "image" if m.group(1) else "link", m.group(3)
        m = REFDEF.match(line)
        if m:
            yield number, "link", m.group(1)
        for m in HTML_ATTR.finditer(line):
            yield number, "image" if m.group(2).lower() == "src" else "link", m.group(3)


def check_file(path, root, report):
    """Checks one file; returns (links checked, broken)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    checked = broken = 0
    here = os.path.dirname(path)
    name = os.path.relpath(path, root)
    for number, kind, target in targets(text):
        target = target.strip()
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]
        if not target or SCHEME.match(target):
            continue
        checked += 1
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part.split("?", 1)[0])
        anchor = urllib.parse.unquote(anchor)
        if file_part:
            resolved = os.path.normpath(os.path.join(root, file_part.lstrip("/")) if file_part.startswith("/")
                                        else os.path.join(here, file_part))
        else:
            resolved = path
        why = None
        if not os.path.exists(resolved):
            why = f"no such file {os.path.relpath(resolved, root)}"
        elif anchor and resolved.endswith(".md") and os.path.isfile(resolved):
            if anchor not in anchors(resolved):
                why = f"no heading with anchor '{anchor}' in {os.path.relpath(resolved, root)}"
        if why:
            broken += 1
            report(f"{name}:{number}: broken {kind} '{target}': {why}")
    return checked, broken


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the repository (or fixture) root")
    parser.add_argument("files", nargs="*", help="Markdown files (default: README.md and docs/*.md under --root)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"check_links: --root {args.root} is not a directory", file=sys.stderr)
        return 2
    files = [os.path.abspath(f) for f in args.files]
    if not files:
        files = [os.path.join(root, "README.md")]
        docs = os.path.join(root, "docs")
        if os.path.isdir(docs):
            files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        print(f"check_links: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    checked = broken = 0
    for f in files:
        c, b = check_file(f, root, print)
        checked += c
        broken += b
    print(f"check_links: {broken} broken of {checked} relative links in {len(files)} files")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
