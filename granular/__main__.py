import sys

from granular.apps.cli import main

sys.exit(main())
