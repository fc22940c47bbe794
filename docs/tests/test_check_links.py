"""Tests of check_links.py on two tiny books: one whose links all resolve, one with one broken link
of each kind the checker must catch, and a Markdown page with links of each kind. Run: python3 -m unittest discover -s docs/tests"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import check_links  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")


class CheckLinksTest(unittest.TestCase):
    def test_a_book_whose_links_resolve_passes(self):
        self.assertEqual(check_links.broken_links(os.path.join(FIXTURES, "ok")), [])
        self.assertEqual(check_links.main(["check_links.py", os.path.join(FIXTURES, "ok")]), 0)

    def test_every_kind_of_broken_link_is_reported(self):
        problems = check_links.broken_links(os.path.join(FIXTURES, "broken"))
        self.assertEqual(
            problems,
            [
                "index.html:5: missing.html: no such file",
                "index.html:6: other.html#no-such-anchor: no anchor #no-such-anchor",
                "index.html:7: #also-missing: no anchor #also-missing",
                "index.html:8: ../ok/index.html: leaves the book",
                "index.html:9: picture.png: no such file",
            ],
        )
        self.assertEqual(check_links.main(["check_links.py", os.path.join(FIXTURES, "broken")]), 1)

    def test_a_directory_without_a_book_is_an_error(self):
        empty = os.path.join(FIXTURES, "ok", "sub", "nothing-here")
        self.assertEqual(check_links.main(["check_links.py", empty]), 2)

    def test_markdown_links_name_existing_files(self):
        page = os.path.join(FIXTURES, "markdown", "page.md")
        self.assertEqual(
            check_links.broken_markdown_links([page]),
            [
                f"{page}:4: missing-picture.png: no such file",
                f"{page}:5: no-such-file.md#section: no such file",
            ],
        )
        self.assertEqual(check_links.main(["check_links.py", "--markdown", page]), 1)


if __name__ == "__main__":
    unittest.main()
