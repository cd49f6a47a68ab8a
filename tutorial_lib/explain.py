"""``python -m tutorial_lib.explain script.py [args ...]``: the entry point; the code is in ``tools/explain.py``."""

import sys

from .tools.explain import main

if __name__ == "__main__":
    sys.exit(main())
