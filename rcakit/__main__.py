"""``python -m rcakit``: the ``rcakit`` command (:mod:`rcakit.book.cli`)."""

from rcakit.book.cli import main

raise SystemExit(main())
