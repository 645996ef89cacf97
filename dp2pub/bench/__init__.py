"""Benchmarks (``make bench`` / ``python -m dp2pub.bench``): measured rates, never asserted."""
