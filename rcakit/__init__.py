"""rcakit: a research workbench on causal failure attribution for LLM agents.

Each chapter of the rcakit book reproduces one published result; this package
holds the mechanics the chapters share (simulators, estimators, diagnosers,
metrics, loaders). See ``rcakit.book.registry`` for the list of chapters.
"""

__version__ = "0.1.0"


class RcakitError(ValueError):
    """A user-facing error: bad input, bad parameter, unreachable server.

    The CLI prints ``str(error)`` as one line and exits with status 2.
    """
