"""`python -m mlirgpu`: same as the `mlirgpu` command."""
import sys

from .server.client import main

sys.exit(main())
