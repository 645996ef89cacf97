"""Errors about data files: missing, corrupt, truncated or not the expected copy.

Every message names the file (absolute path) and, where the problem sits on one line, its
1-based line number, so ``dp2pub`` can print it as one line and the MLflow run records it.
"""

from __future__ import annotations

from pathlib import Path


class DataFileError(ValueError):
    """A data file cannot be used as it is.

    Attributes:
        path: the file (or URL) at fault.
        line: 1-based line number of the first problem, or None when it is not on one line
            (checksum mismatch, undecodable download).
        problem: what is wrong, without the location.
    """

    def __init__(self, path: str | Path, problem: str, line: int | None = None) -> None:
        self.path, self.line, self.problem = str(path), line, problem
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {problem}")


class DataNotFoundError(DataFileError):
    """A data file is in none of the places searched.

    Attributes:
        searched: the directories looked in, in order.
    """

    def __init__(self, filename: str, searched: list[Path], hint: str) -> None:
        self.searched = list(searched)
        places = ", ".join(str(p) for p in searched)
        super().__init__(filename, f"not found in {places}; {hint}")
