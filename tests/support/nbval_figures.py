"""A pytest plugin for the nbval pass: compare figures byte for byte, not only text.

nbval skips ``image/png`` outputs unless nbdime is in use. ``make test`` runs
nbval under another ``PYTHONHASHSEED`` than the one the quick book was
executed with, with this plugin (``-p nbval_figures``), so the same pass
checks that every output, figures included, is independent of the hash seed.
"""

from nbval.plugin import IPyNbFile

_init = IPyNbFile.__init__


def _compare_figures(self: IPyNbFile, *args: object, **kwargs: object) -> None:
    _init(self, *args, **kwargs)
    self.skip_compare = tuple(key for key in self.skip_compare if key != "image/png")


IPyNbFile.__init__ = _compare_figures
