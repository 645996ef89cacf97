"""dp2pub's Hydra search-path plugin: installed plugins' config groups beside dp2pub's own."""
