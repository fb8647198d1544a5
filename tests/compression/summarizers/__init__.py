"""Tests of ctxpack/compression/summarizers."""
