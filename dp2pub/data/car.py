"""UCI Car Evaluation: 1728 cars, 6 ordinal features and the acceptability class.

Source: M. Bohanec (1997), *Car Evaluation*, UCI Machine Learning Repository,
doi:10.24432/C5JP48; the model behind it: M. Bohanec & V. Rajkovic, "Knowledge acquisition
and explanation for multi-attribute decision making", 8th Intl Workshop on Expert Systems and
their Applications, Avignon, 1988. The records cover the feature space completely
(4*4*4*3*3*3 = 1728).

Domains and their order are those of ``car.names`` sections 7 and 9. ``car.names`` writes
``v-high``, ``5-more`` and ``v-good`` where ``car.data`` writes ``vhigh``, ``5more`` and
``vgood``; the labels here are the data file's spelling.
"""

from __future__ import annotations

from pathlib import Path

from dp2pub.data.categorical import CategoricalTable
from dp2pub.data.dataset import Dataset
from dp2pub.data.files import UCI_URL, DataFile

#: Attribute -> categories, in ``car.names`` order; the last one is the class. Every
#: attribute is ordinal in this order (buying ``vhigh`` .. ``low``, class ``unacc`` .. ``vgood``).
CAR_DOMAIN: dict[str, tuple[str, ...]] = {
    "buying": ("vhigh", "high", "med", "low"),
    "maint": ("vhigh", "high", "med", "low"),
    "doors": ("2", "3", "4", "5more"),
    "persons": ("2", "4", "more"),
    "lug_boot": ("small", "med", "big"),
    "safety": ("low", "med", "high"),
    "class": ("unacc", "acc", "good", "vgood"),
}
CAR = CategoricalTable("car", "car.data", CAR_DOMAIN, target="class", n_records=1728, ordinal=tuple(CAR_DOMAIN))


def parse_car(path: DataFile | str | Path) -> Dataset:
    """Encode a file in the format of ``car.data`` (7 comma-separated fields, no header).

    Raises:
        DataFileError: naming the file and line of a wrong field count or unknown category.
    """
    return CAR.parse(path)


def load_car(
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    verify_checksum: bool = True,
    download: bool = False,
    url_base: str = UCI_URL["car"],
) -> Dataset:
    """UCI Car Evaluation as a Dataset of 1728 records over 7 attributes, target ``class``.

    The records cover the feature space completely (4*4*4*3*3*3 = 1728). Domains and their
    order are those of ``car.names``; every attribute is ordinal in that order. Labels are
    the data file's spelling (``vhigh``, ``5more``, ``vgood``).

    Parameters
    ----------
    data_dir : str or pathlib.Path, optional
        A directory holding your own ``car.data`` (plain or .gz); None: DP2PUB_DATA_DIR if
        set, else the copy packaged with dp2pub (see
        :func:`dp2pub.data.files.open_data_files`).
    cache_dir : str or pathlib.Path, optional
        Where ``download`` puts the file (``<cache_dir>/uci``).
    verify_checksum : bool, optional
        Refuse a file whose SHA-256 differs from the UCI original (default True; the
        packaged copy is always checked).
    download : bool, optional
        Fetch ``car.data`` from ``url_base`` into ``<cache_dir>/uci`` (reused when fetched
        from the same URL before) and read it, whatever ``data_dir`` or DP2PUB_DATA_DIR say;
        a URL that cannot be read fails, naming it (default False).
    url_base : str, optional
        The archive folder to download from (http://, https://, ftp:// or file://).

    Returns
    -------
    Dataset
        The table, named ``car``, target ``class``.

    Raises
    ------
    DataFileError
        Naming the file and line of a wrong field count or unknown category, or a file whose
        checksum differs.

    References
    ----------
    .. [1] M. Bohanec, *Car Evaluation*, UCI Machine Learning Repository, 1997,
       doi:10.24432/C5JP48.
    .. [2] M. Bohanec, V. Rajkovic, "Knowledge acquisition and explanation for
       multi-attribute decision making", 8th Intl Workshop on Expert Systems and their
       Applications, Avignon, 1988.

    Examples
    --------
    >>> from dp2pub import load_car
    >>> car = load_car()
    >>> car.n, car.d, car.target
    (1728, 7, 'class')
    >>> car.domain.labels[car.target_column]
    ('unacc', 'acc', 'good', 'vgood')
    """
    return CAR.load(data_dir, verify_checksum, download=download, url_base=url_base, cache_dir=cache_dir)
