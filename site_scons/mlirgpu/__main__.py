"""`python -m mlirgpu`: same as the `mlirgpu` command."""
import sys

from .client import main

sys.exit(main())
