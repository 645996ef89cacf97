"""dp2pub's Hydra sweeper (``hydra/sweeper=dp2pub``, the default)."""
