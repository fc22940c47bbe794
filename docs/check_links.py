#!/usr/bin/env python3
"""Checks every relative link of a built HTML book: the file it names exists inside the book, and
its `#anchor` is an `id` (or an `<a name>`) of that file. mdBook does not check links itself.

Usage: check_links.py BOOK_DIR    (prints each broken link; exit 0: none, 1: some, 2: no book)
       check_links.py --markdown FILE.md...
                                  (the repository's own Markdown outside the book, such as README.md:
                                   every relative link names a file or directory that exists)

Links with a scheme (`https:`, `mailto:`, ...) or a host (`//host/...`) are not followed: the book
must not need the network, and a link out of the repository is a reviewer's question, not this
script's.
"""

import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

# Attributes that name another resource, per tag.
LINK_ATTRIBUTES = {"a": "href", "link": "href", "script": "src", "img": "src", "iframe": "src"}


class Page(HTMLParser):
    """The anchors a page defines and the links it makes (with their line numbers)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.anchors = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.anchors.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.anchors.add(attrs["name"])
        wanted = LINK_ATTRIBUTES.get(tag)
        if wanted and attrs.get(wanted) is not None:
            self.links.append((self.getpos()[0], attrs[wanted]))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    page.close()
    return page


def broken_links(book_dir):
    """Every broken relative link under book_dir, as `file:line: link: reason` strings."""
    book_dir = os.path.realpath(book_dir)
    pages = {}
    for root, _dirs, files in os.walk(book_dir):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(root, name)
                pages[path] = parse(path)
    if not pages:
        raise FileNotFoundError(f"no HTML files under {book_dir}")
    problems = []
    for path, page in sorted(pages.items()):
        where = os.path.relpath(path, book_dir)
        for line, link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = path
            if parts.path:
                base = book_dir if parts.path.startswith("/") else os.path.dirname(path)
                target = os.path.realpath(os.path.join(base, unquote(parts.path).lstrip("/")))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
            if os.path.commonpath([book_dir, target]) != book_dir:
                problems.append(f"{where}:{line}: {link}: leaves the book")
                continue
            if not os.path.isfile(target):
                problems.append(f"{where}:{line}: {link}: no such file")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.endswith(".html") and fragment not in pages[target].anchors:
                problems.append(f"{where}:{line}: {link}: no anchor #{fragment}")
    return problems


# An inline Markdown link or image: [text](target) or [text](target "title").
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"`[^`]*`")


def broken_markdown_links(files):
    """Every relative link of the Markdown files that names no existing file or directory. Anchors
    are not checked here: a forge's heading ids differ from mdBook's."""
    problems = []
    for path in files:
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                    continue
                if in_fence:
                    continue
                for match in MARKDOWN_LINK.finditer(CODE_SPAN.sub("", line)):
                    link = match.group(1)
                    parts = urlsplit(link)
                    if parts.scheme or parts.netloc or not parts.path:
                        continue
                    target = os.path.join(os.path.dirname(path), unquote(parts.path))
                    if not os.path.exists(target):
                        problems.append(f"{path}:{number}: {link}: no such file")
    return problems


def main(argv):
    if len(argv) >= 2 and argv[1] == "--markdown":
        problems = broken_markdown_links(argv[2:])
        for problem in problems:
            print(problem)
        print(f"check_links: {len(problems)} broken link(s) in {len(argv) - 2} Markdown file(s)")
        return 1 if problems else 0
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        problems = broken_links(argv[1])
    except FileNotFoundError as error:
        print(f"check_links: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    print(f"check_links: {len(problems)} broken link(s) in {argv[1]}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
