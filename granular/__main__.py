import sys

try:
    from granular.apps.cli import main
except KeyboardInterrupt:
    print("granular: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
