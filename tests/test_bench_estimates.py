"""The estimates benchmark measures estimate / traced peak in one run and writes what it printed."""

import json

from dp2pub.bench import estimates


def test_the_estimates_bench_measures_every_kind_on_tiny_shapes(tmp_path, capsys):
    out = tmp_path / "estimates.json"
    results = estimates.main(
        [
            *("--n", "2000", "--d", "3", "--k", "2-5"),
            *("--mechanisms", "grr", "dp2pub", "--metric-mechanisms", "pram", "--metric-n", "2000"),
            *("--ways", "1,2", "3", "--max-gib", "0.5"),
            *("--out", str(out)),
        ]
    )
    assert json.loads(out.read_text()) == results
    rows = results["rows"]
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("publisher", "grr"),
        ("publisher", "dp2pub"),
        ("metrics", "pram"),
        ("metrics", "pram"),
        ("table", "synthetic"),
    ]
    assert [r.get("ways") for r in rows if r["kind"] == "metrics"] == [[1, 2], [3]]
    for r in rows:  # every estimate bounds its peak within the bench's slack, at most 4 times it
        assert r["peak"] > 0 and r["ratio"] == r["estimate"] / r["peak"]
        assert r["within"], r
    assert results["summary"]["publisher"]["rows"] == 2 and results["summary"]["publisher"]["outside"] == 0
    assert results["skipped"] == [] and results["max_gib"] == 0.5
    printed = capsys.readouterr().out
    assert "publisher grr" in printed and f"wrote {out}" in printed
