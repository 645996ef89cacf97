"""Study figures: MLflow runs -> tidy CSV -> mean and 95% interval over seeds -> PNG + PDF.

``dp2pub-figures <study>`` (:mod:`dp2pub.figures.cli`) composes the study's experiment config
(:mod:`.load`), reads its ``figures:`` section into specs (:mod:`.schema`, :mod:`.studies`)
and chains :mod:`.collect`, :mod:`.aggregate` and :mod:`.plot` for each figure, with the
figure's overlays (:mod:`.overlays`); ``dp2pub-figures experiment=<name> x=... y=...`` draws
any sweep ad hoc. docs/how-to/figures.md describes the section.
"""
