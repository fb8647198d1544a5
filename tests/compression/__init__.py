"""Tests of ctxpack/compression, one module per module it tests."""
