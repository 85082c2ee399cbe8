"""``python -m roofline_book``：即 :mod:`roofline_book.cli` 的命令行工具。"""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
