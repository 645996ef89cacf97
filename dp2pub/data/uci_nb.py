"""The UCI tables of LDP naive Bayes beside Car: Mushroom, Nursery, Chess and Connect-4.

Yilmaz, Al-Rubaie & Chang (arXiv:1905.01039) evaluate naive Bayes from LDP reports on Car,
Chess (King-Rook vs King-Pawn), Mushroom, Connect-4 and Nursery. Each table here is the UCI
original (packaged under ``uci-nb/``, SHA-256 checked); its attributes, their categories and
their order are those of its ``.names`` file, spelled as in the data file:

- **mushroom** (``agaricus-lepiota.data``; J. Schlimmer 1987, from the Audubon Society Field
  Guide 1981, doi:10.24432/C5959T): 8,124 records, the class ``class`` (``e`` edible, ``p``
  poisonous) first, then 22 attributes of single-letter codes (``.names`` section 7 spells
  them out: ``odor`` ``n`` = none). ``stalk_root`` is ``?`` in 2,480 records; ``.names``
  lists ``missing=?`` among its values, and it stays one: a seventh category ``?``, so no
  record is dropped and naive Bayes learns from the missingness like from any other value.
  ``veil_type`` keeps both values of ``.names`` (``p``, ``u``) though the data holds only ``p``.
- **nursery** (``nursery.data``; V. Rajkovic 1989, doi:10.24432/C5P88W): 12,960 records
  covering the 8 attributes' space, class ``class`` of 5 values (``recommend`` has 2
  records). ``.names`` spells ``non-prob`` what the data spells ``nonprob``: the data's spelling.
- **chess** (``kr-vs-kp.data``; A. Shapiro 1989, doi:10.24432/C5DK5C): 3,196 records, 36
  board features named in ``.names`` section 7 (``bkblk`` .. ``wtoeg``), class ``class``
  (``won``, ``nowin``). ``.names`` gives no categories ("see Shapiro's book"): each
  feature's categories are the values the data holds, in alphabetical order.
- **connect4** (``connect-4.data``; J. Tromp 1995, doi:10.24432/C59P43): 67,557 positions,
  42 squares ``a1`` .. ``g6`` of ``x``, ``o`` or ``b`` (blank), class ``class``
  (``win``, ``loss``, ``draw``).

These are read from the packaged copies or from ``uci-nb/`` in a user's data directory; UCI
serves Connect-4 compressed (``connect-4.data.Z``), so none of the four is downloaded.
"""

from __future__ import annotations

import functools
from pathlib import Path

from dp2pub.data.categorical import CategoricalTable
from dp2pub.data.dataset import Dataset
from dp2pub.validation import ConfigError

_MUSHROOM_FEATURES: dict[str, tuple[str, ...]] = {
    "cap_shape": ("b", "c", "x", "f", "k", "s"),
    "cap_surface": ("f", "g", "y", "s"),
    "cap_color": ("n", "b", "c", "g", "r", "p", "u", "e", "w", "y"),
    "bruises": ("t", "f"),
    "odor": ("a", "l", "c", "y", "f", "m", "n", "p", "s"),
    "gill_attachment": ("a", "d", "f", "n"),
    "gill_spacing": ("c", "w", "d"),
    "gill_size": ("b", "n"),
    "gill_color": ("k", "n", "b", "h", "g", "r", "o", "p", "u", "e", "w", "y"),
    "stalk_shape": ("e", "t"),
    "stalk_root": ("b", "c", "u", "e", "z", "r", "?"),
    "stalk_surface_above_ring": ("f", "y", "k", "s"),
    "stalk_surface_below_ring": ("f", "y", "k", "s"),
    "stalk_color_above_ring": ("n", "b", "c", "g", "o", "p", "e", "w", "y"),
    "stalk_color_below_ring": ("n", "b", "c", "g", "o", "p", "e", "w", "y"),
    "veil_type": ("p", "u"),
    "veil_color": ("n", "o", "w", "y"),
    "ring_number": ("n", "o", "t"),
    "ring_type": ("c", "e", "f", "l", "n", "p", "s", "z"),
    "spore_print_color": ("k", "n", "b", "h", "r", "o", "u", "w", "y"),
    "population": ("a", "c", "n", "s", "v", "y"),
    "habitat": ("g", "l", "m", "p", "u", "w", "d"),
}
MUSHROOM = CategoricalTable(
    "mushroom",
    "uci-nb/agaricus-lepiota.data",
    {"class": ("e", "p"), **_MUSHROOM_FEATURES},
    target="class",
    n_records=8124,
)

_NURSERY_DOMAIN: dict[str, tuple[str, ...]] = {
    "parents": ("usual", "pretentious", "great_pret"),
    "has_nurs": ("proper", "less_proper", "improper", "critical", "very_crit"),
    "form": ("complete", "completed", "incomplete", "foster"),
    "children": ("1", "2", "3", "more"),
    "housing": ("convenient", "less_conv", "critical"),
    "finance": ("convenient", "inconv"),
    "social": ("nonprob", "slightly_prob", "problematic"),
    "health": ("recommended", "priority", "not_recom"),
    "class": ("not_recom", "recommend", "very_recom", "priority", "spec_prior"),
}
NURSERY = CategoricalTable(
    "nursery",
    "uci-nb/nursery.data",
    _NURSERY_DOMAIN,
    target="class",
    n_records=12960,
    ordinal=("parents", "has_nurs", "children", "housing", "finance", "social", "health"),
)

_CHESS_CATEGORIES = {"dwipd": ("g", "l"), "katri": ("b", "n", "w"), "wtoeg": ("n", "t")}
_CHESS_FEATURES = [
    "bkblk",
    "bknwy",
    "bkon8",
    "bkona",
    "bkspr",
    "bkxbq",
    "bkxcr",
    "bkxwp",
    "blxwp",
    "bxqsq",
    "cntxt",
    "dsopp",
    "dwipd",
    "hdchk",
    "katri",
    "mulch",
    "qxmsq",
    "r2ar8",
    "reskd",
    "reskr",
    "rimmx",
    "rkxwp",
    "rxmsq",
    "simpl",
    "skach",
    "skewr",
    "skrxp",
    "spcop",
    "stlmt",
    "thrsk",
    "wkcti",
    "wkna8",
    "wknck",
    "wkovl",
    "wkpos",
    "wtoeg",
]
CHESS = CategoricalTable(
    "chess",
    "uci-nb/kr-vs-kp.data",
    {**{name: _CHESS_CATEGORIES.get(name, ("f", "t")) for name in _CHESS_FEATURES}, "class": ("won", "nowin")},
    target="class",
    n_records=3196,
)

CONNECT4 = CategoricalTable(
    "connect4",
    "uci-nb/connect-4.data",
    {
        **{f"{column}{row}": ("x", "o", "b") for column in "abcdefg" for row in range(1, 7)},
        "class": ("win", "loss", "draw"),
    },
    target="class",
    n_records=67557,
)

#: The tables by dataset name.
UCI_NB: dict[str, CategoricalTable] = {table.name: table for table in (MUSHROOM, NURSERY, CHESS, CONNECT4)}


def load_uci_nb(table: str, data_dir: str | Path | None = None, verify_checksum: bool = True) -> Dataset:
    """One of :data:`UCI_NB` as a Dataset, target ``class``.

    Args:
        table: ``mushroom``, ``nursery``, ``chess`` or ``connect4``.
        data_dir: a directory holding your own ``uci-nb/`` files (plain or .gz); None:
            DP2PUB_DATA_DIR if set, else the copies packaged with dp2pub.
        verify_checksum: refuse a file whose SHA-256 differs from the UCI original (the
            packaged copies are always checked).

    Raises:
        ConfigError: for an unknown ``table``.
        DataFileError: naming the file and line of a bad row, or a wrong checksum.
    """
    if table not in UCI_NB:
        raise ConfigError("table", table, "one of " + ", ".join(UCI_NB))
    return UCI_NB[table].load(data_dir, verify_checksum)


# ``dataset=mushroom|nursery|chess|connect4`` (entry points ``dp2pub.datasets``).
load_mushroom = functools.partial(load_uci_nb, "mushroom")
load_nursery = functools.partial(load_uci_nb, "nursery")
load_chess = functools.partial(load_uci_nb, "chess")
load_connect4 = functools.partial(load_uci_nb, "connect4")
