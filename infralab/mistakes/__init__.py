"""Known mistakes of the course's exercises, one module per exercise (``infralab.mistakes.<part>.<exercise>``).

Each module holds the reference computations and the ``*_mistakes(...)`` functions that map a
mistake's description to its output, for :func:`infralab.testing.assert_close`'s ``mistakes=``.
Visible tests (exercises/*/tests/, shipped to students) and hidden tests (graders/) both import
them from here, so a student meets the same diagnosis ("This looks like: ...") before grading.
"""
