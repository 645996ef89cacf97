"""The exponential mechanism (McSherry and Talwar, "Mechanism design via differential privacy",
FOCS 2007): a candidate drawn with probability ∝ exp(epsilon * score / (2 sensitivity)), by the
Gumbel-max trick (exact in distribution). PrivBayes chooses its network's pairs with it, MST its
tree's edges and AIM each round's marginal."""

from __future__ import annotations

import numpy as np


def exponential_draw(
    scores: np.ndarray, sensitivities: np.ndarray | float, epsilon: float, rng: np.random.Generator | None
) -> int:
    """Index i drawn with probability ∝ exp(epsilon * scores[i] / (2 sensitivities[i])), by the
    Gumbel-max trick (exact in distribution)."""
    if rng is None:
        raise ValueError("the exponential mechanism needs an rng")
    weights = scores * (epsilon / (2 * np.asarray(sensitivities, dtype=np.float64)))
    return int(np.argmax(weights + rng.gumbel(size=scores.size)))
