"""Reports that are packed bit vectors over the domain: a report supports the values whose
bit is 1 (unary encoding's k bits; a k-subset's indicator)."""

from __future__ import annotations

import numpy as np

from dp2pub.mechanisms import bits
from dp2pub.mechanisms.chunks import chunk_rows, chunks
from dp2pub.mechanisms.oracle import FrequencyOracle


class PackedReports(FrequencyOracle):
    """A frequency oracle whose every report is ``ceil(k / 8)`` bytes of packed bits, bit v
    set when the report supports value v (``np.packbits`` of the indicator, row by row)."""

    @classmethod
    def count_bytes(cls, n: int, k: int, **options: object) -> int:
        """Column sums of the packed bits (:func:`~dp2pub.mechanisms.bits.packed_column_sums`),
        users in chunks: each byte's key (int64) twice while it is made, and the histogram of
        (column, byte) pairs."""
        width = (k + 7) // 8
        return 16 * chunk_rows(n, width) * width + 8 * 256 * width + 8 * k

    def support(self, reports: np.ndarray) -> np.ndarray:
        """The unpacked bits: a report supports every value whose bit is 1."""
        return np.unpackbits(reports, axis=1, count=self.k)

    def support_counts(self, reports: np.ndarray) -> np.ndarray:
        """Column sums of the packed bits, chunk by chunk (no unpacking)."""
        counts = np.zeros(self.k, dtype=np.int64)
        for part in chunks(len(reports), reports.shape[1]):
            counts += bits.packed_column_sums(reports[part], self.k)
        return counts
