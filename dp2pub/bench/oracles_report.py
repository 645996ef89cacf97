"""The oracle benchmark's results as markdown: the block the benchmark prints and the site's
benchmark page shows (rendered from the committed ``docs/bench/oracles.json`` when the site is
built: :mod:`dp2pub.bench.pages`)."""

from __future__ import annotations

from dp2pub.bench.references import CHECK_CORRELATION, CHECK_EPSILON, CHECK_N, LIBRARIES, ORACLES, RAPPOR_HASHES
from dp2pub.bench.timing import Result

DOCS_JSON = "docs/bench/oracles.json"


def num(x: float) -> str:
    """Three significant digits, without exponent, with thousands separators."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def rate(x: float) -> str:
    """A rate with an SI suffix: 5.21M, 412k, 950."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= factor:
            return f"{x / factor:.3g}{suffix}"
    return f"{x:.3g}"


def compared_at(r: Result) -> str:
    """The comparison's basis: equal n, or the two n of an extrapolation."""
    if r["equal_n"]:
        return f"equal n = {r['n']:,}"
    return f"**extrapolated** from n = {r['reference_n']:,} to {r['n']:,}"


def row(oracle: str, library: str, result: Result) -> str:
    """The table row of ``library``'s ``oracle``."""
    outcome = result["references"][library]
    if "error" in outcome:
        return f"| {oracle} | {library} | — | — | {outcome['error']} |"
    timed = outcome["oracles"].get(oracle)
    if timed is None:
        return f"| {oracle} | {library} | — | — | not implemented |"
    if "error" in timed:
        return f"| {oracle} | {library} | — | — | failed: {timed['error']} |"
    r = result["ratios"][library][oracle]
    used = timed["at_n"] or timed["at_reference_n"]
    failed = "" if timed["check"]["ok"] else "; **estimate check failed**"
    return (
        f"| {oracle} | {library} | {rate(used['per_s_best'])} ({rate(used['per_s_median'])}) "
        f"| {num(r['best'])}× ({num(r['median'])}×) | {compared_at(r)}{failed} |"
    )


def header(result: Result) -> list[str]:
    """What was measured, how, and on what: configuration, machine and versions."""
    c, m, v = result["config"], result["machine"], result["versions"]
    lines = [
        f"Perturb + unbiased estimate, n = {c['n']:,} users, k = {c['k']}, ε = {c['epsilon']:g}; "
        f"every side warmed up on {c['warmup_n']:,} users, then timed {c['repeats']} times: "
        "users/s of the fastest run (of the median run).",
        "",
        f"Machine: {m['processor']}, {m['cpus']} logical cores; Python {m['python']}, numpy {v['numpy']}; "
        + ", ".join(f"{name} {v[name] or 'not installed'}" for name in LIBRARIES)
        + f" (xxhash {v['xxhash'] or 'not installed'}, numba {v['numba'] or 'not installed'}).",
    ]
    if not c["default"]:
        changed = ", ".join(
            f"{key} = {value:,} (default {default:,})" for key, (value, default) in c["differs_from_default"].items()
        )
        lines += ["", f"**Not the default configuration**: {changed}."]
    return lines


def table(result: Result) -> list[str]:
    """The markdown table: a row for dp2pub and each reference, per oracle."""
    lines = [
        "| oracle | library | users/s, best (median) | dp2pub ÷ library, best (median) | compared at |",
        "|---|---|---:|---:|---|",
    ]
    n = result["config"]["n"]
    for oracle in ORACLES:
        ours = result["dp2pub"][oracle]
        lines.append(f"| {oracle} | dp2pub | {rate(ours['per_s_best'])} ({rate(ours['per_s_median'])}) | | n = {n:,} |")
        lines += [row(oracle, library, result) for library in LIBRARIES]
    return lines


def notes(result: Result) -> list[str]:
    """The table's footnotes: ratios, extrapolation, the xxhash shim, checks, the GRR table."""
    t = result["grr_table"]
    lines = [
        "",
        f"GRR publisher on a {t['n']:,} × {t['d']} table (k = {t['k']}): "
        f"{rate(t['perturb']['per_s_best'])} ({rate(t['perturb']['per_s_median'])}) user-attribute reports/s "
        f"perturbing, {rate(t['perturb_and_estimate']['per_s_best'])} "
        f"({rate(t['perturb_and_estimate']['per_s_median'])}) with every 1-way estimate.",
        "",
        "- Ratios: dp2pub's users/s over the library's, from each side's fastest run (minimum time); "
        "in parentheses the ratio of the medians. *equal n*: both timed on the same n users; "
        "*extrapolated*: the library was timed on fewer users (its projected time at n exceeded "
        f"{result['config']['reference_budget']:g} s) and its per-user rate taken to hold at n.",
    ]
    shim = result.get("xxhash_shim", {})
    if shim.get("applied"):
        lines.append(shim_note(shim, result["ratios"]))
    lines.append(check_note(result))
    return lines


def shim_note(shim: Result, ratios: Result) -> str:
    """The footnote of the xxhash shim: why, what it costs, the hashing oracles' ratios without it."""
    shimmed = [(library, oracle, r) for library, rs in ratios.items() for oracle, r in rs.items() if "shim_share" in r]
    costs = ", ".join(f"{r['shim_share']:.0%} of {library}'s {oracle.upper()}" for library, oracle, r in shimmed)
    bounds = ", ".join(
        f"{library} {oracle.upper()} {rate(r['per_s_best_without_shim'])} users/s, ratio "
        f"{num(r['best_without_shim'])}× ({num(r['median_without_shim'])}×)"
        for library, oracle, r in shimmed
    )
    return (
        f"- Hashing in the references: xxhash {shim['xxhash']} rejects the string their OLH hashes "
        "(`xxhash.xxh32(str(value), seed=seed)`, both libraries) and pure-ldp's RAPPOR hashes "
        "(`xxhash.xxh64(str(data), seed=seed)`): `TypeError: Strings must be encoded before hashing`. "
        "The benchmark times them with a shim (`dp2pub.bench.references.utf8_xxhash`) that encodes the string "
        f"as UTF-8 first, as xxhash 3 did. It adds {shim['overhead_ns_per_hash']:.0f} ns to a hash, k + 1 "
        f"hashes an OLH user, {RAPPOR_HASHES} a RAPPOR user ({costs} time), which the table includes; "
        f"with that cost taken off: {bounds}."
    )


def check_note(result: Result) -> str:
    """The footnote of the estimate checks (every timed oracle's, or the ones that failed)."""
    checks = [("dp2pub", oracle, c) for oracle, c in result["checks"].items()]
    for library, outcome in result["references"].items():
        checks += [(library, o, t["check"]) for o, t in outcome.get("oracles", {}).items() if "check" in t]
    failed = [f"{library} {oracle}" for library, oracle, c in checks if not c["ok"]]
    least = min(c["correlation"] for _, _, c in checks)
    verdict = f"**failed: {', '.join(failed)}**" if failed else f"all passed (least correlation {least:.3f})"
    return (
        f"- Estimate check: every timed oracle estimated a skewed distribution (Pr[v] ∝ 0.7^v, "
        f"{CHECK_N:,} users, ε = {CHECK_EPSILON:g}); its correlation with the truth must be at least "
        f"{CHECK_CORRELATION}: {verdict}."
    )


def render(result: Result) -> str:
    """The markdown block of a results dict (printed by the benchmark, and its page's)."""
    return "\n".join([*header(result), "", *table(result), *notes(result)])
