"""A bounded sample of bench/fuzz.py: mutated real-shaped transcripts of every format,
read by every reader and compressed and restored, never crash and always come back.

The full runs (a million inputs, see BENCHMARKS.md) take the better part of an hour;
this one takes seconds, with a fixed seed, so that a failure is the same on every run.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
import types
from collections import Counter

from .helpers import ROOT

COUNT = 2000
SEED = 20261126


@functools.cache
def fuzzer() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz", ROOT / "bench" / "fuzz.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_a_fuzz_sample_never_crashes_and_always_restores() -> None:
    fuzz = fuzzer()
    seeds = fuzz.load_seeds(None, random.Random(SEED))
    assert {s.format for s in seeds} == set(fuzz.FORMATS)
    shares = fuzz.Shares(other=0.25, stats=0.25, view=0.1, render=0.02, compress=0.1)
    seen: Counter[tuple[str, str]] = Counter()
    failures = []
    for i in range(COUNT):
        for target, result, what in fuzz.run_one(seeds, SEED, i, shares):
            seen[target.split(":")[0], result.split(":")[0]] += 1
            if result in ("internal", "roundtrip"):
                failures.append((i, target, what))
            elif result.startswith("rejected:") and not target.startswith("compress"):
                # a reader refuses only with an InputError: file, line and problem
                assert result == "rejected:InputError", (i, target, result)
    assert failures == [], f"again: python bench/fuzz.py --seed {SEED} --start N --count 1"
    # the sample reaches every target, with inputs each takes and inputs each refuses
    for target in ("read", "forced", "compress"):
        assert seen[target, "accepted"] > 0 and seen[target, "rejected"] > 0, seen
