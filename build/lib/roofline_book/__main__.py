"""``python -m roofline_book``: the command-line tool of :mod:`roofline_book.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
