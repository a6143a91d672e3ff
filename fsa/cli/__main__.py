"""``python -m fsa.cli``: the ``fsa`` command."""
import sys

from fsa.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
