"""`python -m ctxpack` runs the command line."""

from .cli import main

main()
