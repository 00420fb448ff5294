"""The chapters' own code: one module per notebook, ``rcakit/chapters/<stem>.py`` beside ``notebooks/<stem>.md``.

A chapter module owns what only its page needs: its sections (every public
function ``*_section`` returns a :class:`rcakit.sections.Section`), its figures
(``*_figure``, each returning a matplotlib ``Figure``), its paper numbers, its
seed streams and the facts its prose glues. It imports the science packages
(``scm``, ``repair``, ``rag``, ``trajectories``, ``attribution``) and the page
tools (``sections``, ``claims``, ``results``, ``tables``, ``plotting``); nothing
below it imports a chapter (``tests/unit/test_layers.py``). A notebook reads

    from rcakit.chapters import coverage_collapse as chapter

and calls ``chapter.<name>_section(...)``. Modules whose name starts with an
underscore hold what two chapters share (the two RAG pages).
"""

__all__: list[str] = []  # nothing re-exported: import a chapter module by name (from rcakit.chapters import primer)
