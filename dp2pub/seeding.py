"""Explicit randomness: every phase of a job draws from its own stream of the job's seed.

The streams are children of ``SeedSequence(seed)`` keyed by the phase name, so adding a
phase never shifts the streams of the others, and the same seed gives the same draws in every
process, whatever else runs there. No global seeding anywhere.
"""

from __future__ import annotations

import zlib

import numpy as np

from dp2pub.validation import check_int


def phase_rng(seed: int, phase: str) -> np.random.Generator:
    """The generator of phase ``phase`` ("data", "mechanism", "metrics", ...) of job ``seed``."""
    seed = check_int(seed, "seed", 0)
    key = zlib.crc32(phase.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


def seed_entropy(seed: object) -> int:
    """The entropy of the job's root ``SeedSequence`` (logged with every run), from which
    every phase stream is spawned; ``seed`` is a config value, ConfigError unless an integer >= 0."""
    entropy = np.random.SeedSequence(check_int(seed, "seed", 0)).entropy
    assert isinstance(entropy, int)  # an int seed is its own entropy
    return entropy
