import sys

from tapelint.cli import main

sys.exit(main())
