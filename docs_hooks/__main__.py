import sys

from docs_hooks.cli import main

sys.exit(main())
