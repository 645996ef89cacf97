"""Fixed look of every figure: one colour and label per mechanism/oracle, rc settings, metadata.

Colours follow tab10 in the order of :data:`ORDER`, so a mechanism has the same colour in
every study; a name outside it gets a colour chosen by a hash of the name (deterministic
across runs and machines, unlike Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # matplotlib >= 3.9 names the rc keys; only the type checker needs them
    from matplotlib.typing import RcKeyType

#: Mechanisms and oracles in legend order.
ORDER = ("grr", "sue", "oue", "olh", "rappor", "pram", "dp2pub", "privbayes", "samarati", "mondrian", "ldp_nb")
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: name -> colour (ldp_nb, the eleventh, gets tab20b's dark blue; dppro and the DP2-Pub
#: paper's lines, mechanism/trust/prior, tab20b's and tab20's; ldp_marginals' lines tab20c's).
COLOURS: dict[str, str] = {
    **dict(zip(ORDER, _TAB10)),
    "ldp_nb": "#393b79",
    "dppro": "#637939",
    "dp2pub/local/inverse": _TAB10[ORDER.index("dp2pub")],
    "dp2pub/local/ibu": "#7b4173",
    "dp2pub/trusted/inverse": "#17becf",
    "dp2pub/trusted/ibu": "#bd9e39",
    "pram/inverse": _TAB10[ORDER.index("pram")],
    # ours, ldp_marginals: tab20c's orange (its default), lighter orange (all pairs), green (tested)
    "ldp_marginals": "#e6550d",
    "ldp_marginals/adaptive": "#e6550d",
    "ldp_marginals/all_pairs": "#fd8d3c",
    "ldp_marginals/all_pairs/0.05": "#fd8d3c",
    "ldp_marginals/adaptive/0.05": "#31a354",
}
#: Colours for names not in COLOURS (Dark2).
FALLBACK = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
#: Display names in legends.
LABELS = {
    "grr": "GRR",
    "sue": "SUE",
    "oue": "OUE",
    "olh": "OLH",
    "rappor": "RAPPOR",
    "pram": "PRAM",
    "dp2pub": "DP2-Pub",
    "privbayes": "PrivBayes",
    "samarati": "Samarati",
    "mondrian": "Mondrian",
    "ldp_nb": "LDP naive Bayes",
}

#: (colour, line style) of a metric's first, second ... reference line (``StudySpec.baselines``).
REFERENCE_STYLES: tuple[tuple[str, Literal[":", "-."]], ...] = (("black", ":"), ("black", "-."))
#: Legend names of reference metrics by prefix (default: "non-private").
REFERENCE_LABELS = {"misclass_majority": "majority class", "accuracy_majority": "majority class"}

#: matplotlib settings of every figure (applied with rc_context, never globally).
RC: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "lines.markersize": 4.5,
    "pdf.fonttype": 42,
    "svg.hashsalt": "dp2pub-figures",
    "savefig.dpi": 150,
}
DPI = 150
#: No timestamps, so two builds of the same data give identical files.
METADATA = {
    "png": {"Software": "dp2pub-figures"},
    "pdf": {"Creator": "dp2pub-figures", "Producer": "dp2pub-figures", "CreationDate": None, "ModDate": None},
}


def colour(name: object) -> str:
    """The colour of a mechanism or oracle (any other value: a stable hashed fallback)."""
    key = str(name)
    if key in COLOURS:
        return COLOURS[key]
    digest = hashlib.md5(key.encode()).digest()
    return FALLBACK[digest[0] % len(FALLBACK)]


def sort_key(name: object) -> tuple[int, str]:
    """Legend order: :data:`ORDER` first, then by name."""
    key = str(name)
    return (ORDER.index(key) if key in ORDER else len(ORDER), key)


def reference_label(metric: str) -> str:
    """Legend name of a reference metric."""
    return next((v for k, v in REFERENCE_LABELS.items() if metric.startswith(k)), "non-private")


def label(name: object) -> str:
    """Legend name of a mechanism or oracle."""
    return LABELS.get(str(name), str(name))
