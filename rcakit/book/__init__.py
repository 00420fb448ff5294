"""The book machinery: from a chapter's MyST notebook to an executed page and the HTML.

- :mod:`rcakit.book.registry`: the chapters, their parameters cells and what a
  valid value is (``check_params`` is what a chapter's first code cell calls);
- :mod:`rcakit.book.inputs`: the data files, plug-ins and servers a parameter
  names, each checked before a kernel starts;
- :mod:`rcakit.book.runner`, :mod:`rcakit.book.kernel`,
  :mod:`rcakit.book.staging`: papermill in a kernel, its deadline and signals,
  and writes that only land when a chapter finished;
- :mod:`rcakit.book.provenance`: whether an executed page is stale;
- :mod:`rcakit.book.build`: Jupyter Book over the executed pages;
- :mod:`rcakit.book.cli`: the ``rcakit`` command.

The science packages (``scm``, ``repair``, ``rag``, ``trajectories``,
``attribution``) import nothing from here; the chapters import only
``check_params``.
"""

from rcakit.book.registry import check_params

__all__ = ["check_params"]
