"""dp2pub's Hydra launcher for Ray (``hydra/launcher=ray``, ``cluster=ray``)."""
