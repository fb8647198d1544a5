"""Rendering of results for people (Rich) and programs (JSON, CSV, markdown).

Only this package and ctxpack.cli import rich; nothing here does arithmetic beyond
formatting the numbers the library computed.
"""
