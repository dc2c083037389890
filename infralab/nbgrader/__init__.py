"""nbgrader and JupyterLab: the course's exercises as notebooks, checked by the same tests.

- :mod:`infralab.nbgrader.export`: course.yml -> an nbgrader course directory (one assignment
  per part, one notebook per exercise; answer cells with solution regions, test cells that run
  the pytest test functions of ``exercises/.../tests`` and ``graders/``);
- :mod:`infralab.nbgrader.notebook`: the in-kernel side (``%%infralab_test`` cells, the
  ``impl``/``seed``/``gen`` fixtures, warnings kept off stderr);
- :mod:`infralab.nbgrader.grade`: the secure path: submitted notebooks -> modules -> the judge
  -> nbgrader's gradebook.

``%load_ext infralab.nbgrader`` registers the ``%%infralab_test`` cell magic.
"""


def load_ipython_extension(ipython) -> None:  # noqa: D401 - IPython's protocol
    from infralab.nbgrader.notebook import register_magic
    register_magic(ipython)
