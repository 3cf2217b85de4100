"""`python -m mlirgpu`: same as the `mlirgpu` command."""
import sys

from .cli import main

sys.exit(main())
