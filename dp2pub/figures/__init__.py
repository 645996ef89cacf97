"""Study figures: MLflow runs -> tidy CSV -> mean and 95% interval over seeds -> PNG + PDF.

``dp2pub-figures <study>`` (:mod:`dp2pub.figures.cli`) chains :mod:`.collect`,
:mod:`.aggregate` and :mod:`.plot` for a study of :data:`dp2pub.figures.studies.STUDIES`.
"""
