"""A user's own table (``dataset=csv``): CSV, TSV, .csv.gz and Parquet give the same Dataset
on the public domains of a domain file or ``bins``; inferred domains leave a note that
reaches the job's results; every bad file or key is refused in one line naming the file,
line and column (or the key)."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp2pub.data import csv_table
from dp2pub.data.csv_table import load_csv, table_name
from dp2pub.data.domain_file import NumericBins, interval_labels, read_domain_file
from dp2pub.data.errors import DataFileError
from dp2pub.data.tally import Tally
from dp2pub.job import run_job
from dp2pub.learn.split import split_train_test
from dp2pub.validation import ConfigError
from tests.conftest import run_cli, runs_in

DOMAIN = """\
age: {bins: [0, 18, 30, 50, 120]}
sex: [female, male]
education:
  values: [primary, secondary, tertiary]
  ordinal: true
income: [low, high]
"""
AGE_EDGES = (0, 18, 30, 50, 120)


def survey_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """A small survey: age 0..120, three categorical columns."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(0, 121, n),
            "sex": rng.choice(["female", "male"], n),
            "education": rng.choice(["primary", "secondary", "tertiary"], n, p=[0.3, 0.5, 0.2]),
            "income": rng.choice(["low", "high"], n, p=[0.7, 0.3]),
        }
    )


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.fixture
def survey(tmp_path) -> tuple[Path, Path, pd.DataFrame]:
    """``survey.csv`` and its domain file ``survey.yaml``."""
    frame = survey_frame()
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    return path, write(tmp_path, "survey.yaml", DOMAIN), frame


def expected_codes(frame: pd.DataFrame) -> np.ndarray:
    age = np.clip(np.searchsorted(AGE_EDGES, frame["age"], side="right") - 1, 0, 3)
    sex = (frame["sex"] == "male").to_numpy()
    education = pd.Index(["primary", "secondary", "tertiary"]).get_indexer(frame["education"])
    income = (frame["income"] == "high").to_numpy()
    return np.stack([age, sex, education, income], axis=1)


# --- formats -----------------------------------------------------------------------------


def test_csv_tsv_gz_and_parquet_give_the_same_dataset(survey, tmp_path):
    path, domain, frame = survey
    data = load_csv(str(path), str(domain), target="income")
    assert (data.name, data.n, data.d, data.target) == ("survey", 300, 4, "income")
    assert np.array_equal(data.codes, expected_codes(frame))
    assert data.domain.labels[0] == ("[0,18)", "[18,30)", "[30,50)", "[50,120]")
    assert data.domain.ordinal == ("age", "education") and data.notes == ()
    others = tmp_path / "others"
    others.mkdir()
    frame.to_csv(others / "survey.tsv", sep="\t", index=False)
    (others / "survey.csv.gz").write_bytes(gzip.compress(path.read_bytes()))
    write(others, "survey.txt", path.read_text().replace(",", ";"))
    same = [
        load_csv(str(others / "survey.tsv"), str(domain), target="income"),
        load_csv(str(others / "survey.csv.gz"), str(domain), target="income"),
        load_csv(str(others / "survey.txt"), str(domain), target="income", sep=";"),
    ]
    if importlib.util.find_spec("pyarrow") is not None:
        frame.to_parquet(others / "survey.parquet", index=False)
        same.append(load_csv(str(others / "survey.parquet"), str(domain), target="income"))
    for other in same:
        assert other.fingerprint() == data.fingerprint()
        assert np.array_equal(other.codes, data.codes) and other.domain == data.domain


def test_parquet_gives_the_same_dataset_as_csv(survey, tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (pip install 'dp2pub[parquet]')")
    path, domain, frame = survey
    frame.to_parquet(tmp_path / "survey.parquet", index=False)
    parquet = load_csv(str(tmp_path / "survey.parquet"), str(domain), columns=["income", "age"])
    csv = load_csv(str(path), str(domain), columns=["income", "age"])
    assert parquet.fingerprint() == csv.fingerprint() and parquet.domain.names == ("income", "age")


def test_a_json_domain_file_reads_as_the_yaml_one(survey, tmp_path):
    path, domain, _ = survey
    json_domain = write(
        tmp_path,
        "survey.json",
        '{"age": {"bins": [0, 18, 30, 50, 120]}, "sex": ["female", "male"],\n'
        '\t"education": {"values": ["primary", "secondary", "tertiary"], "ordinal": true},\n'
        '\t"income": ["low", "high"]}',
    )
    assert load_csv(str(path), str(json_domain)).fingerprint() == load_csv(str(path), str(domain)).fingerprint()


def test_relative_paths_are_read_from_the_working_directory(survey, monkeypatch):
    path, _, _ = survey
    monkeypatch.chdir(path.parent)
    assert load_csv("survey.csv", "survey.yaml").n == 300


def test_quotes_blank_lines_crlf_and_a_byte_order_mark_are_read(tmp_path):
    text = '\ufeffcity,note\r\n\r\n"Paris, France","said ""hi""\nand left"\r\n  \r\nLyon,plain\r\n'
    path = write(tmp_path, "quoted.csv", text)
    data = load_csv(str(path), infer_domain=True)
    assert data.domain.names == ("city", "note")
    assert data.domain.labels == (("Lyon", "Paris, France"), ("plain", 'said "hi"\nand left'))
    assert data.codes.tolist() == [[1, 1], [0, 0]]


def test_lines_ended_by_a_carriage_return_alone_are_one_line(tmp_path):
    path = write(tmp_path, "mac.csv", "a,b\rx,u\r")
    with pytest.raises(DataFileError) as raised:
        load_csv(str(path), infer_domain=True)
    message = str(raised.value)
    assert "line 1" in message and "CR alone" in message and "\n" not in message


def test_a_bin_edge_that_is_no_number_is_named(tmp_path):
    path = write(tmp_path, "t.csv", "a,b\n1,u\n")
    domain = write(tmp_path, "t.yaml", "a: {bins: [0, ten]}\nb: [u]\n")
    with pytest.raises(DataFileError, match="line 1: column 'a': bin edge 'ten' is not a number"):
        load_csv(str(path), domain=str(domain))


def test_the_name_is_the_files_stem():
    assert table_name("/a/survey.csv.gz") == "survey" and table_name("b/survey.tsv") == "survey"
    assert table_name("survey.parquet") == "survey"


# --- domains, bins, columns, target --------------------------------------------------------


def test_bins_hold_their_lower_edge_and_the_last_its_upper_one(tmp_path):
    path = write(tmp_path, "ages.csv", "age,x\n0,a\n17.5,a\n18,a\n49,a\n50,a\n120,a\n")
    data = load_csv(str(path), bins={"age": [0, 18, 50, 120]}, infer_domain=True)
    assert data.column("age").tolist() == [0, 0, 1, 1, 2, 2]
    assert data.domain.labels[0] == ("[0,18)", "[18,50)", "[50,120]")
    assert data.domain.ordinal == ("age",)  # x is text: sorted, unordered
    assert interval_labels((-np.inf, 0.5, np.inf)) == ("(-inf,0.5)", "[0.5,inf)")
    bins = NumericBins((0.0, 10.0), ("all",))
    assert bins.labels == ("all",) and bins.codes(np.array([0.0, 10.0])).tolist() == [0, 0]


def test_bins_in_the_domain_file_may_have_labels_and_open_ends(tmp_path):
    path = write(tmp_path, "pay.csv", "pay,sex\n-5,f\n0,m\n20000,f\n1e9,m\n")
    domain = write(
        tmp_path, "pay.yaml", "pay: {bins: [-.inf, 0, 20000, .inf], labels: [debt, low, high]}\nsex: [f, m]\n"
    )
    data = load_csv(str(path), str(domain))
    assert data.domain.labels[0] == ("debt", "low", "high")
    assert data.column("pay").tolist() == [0, 1, 2, 2]


def test_values_are_matched_as_written_and_unused_ones_stay(tmp_path):
    path = write(tmp_path, "t.csv", "flag,code\nyes,01\nno, 1\n")
    domain = write(tmp_path, "t.yaml", "flag: [yes, no, maybe]\ncode: ['1', '01']\n")
    data = load_csv(str(path), str(domain))
    assert data.domain.labels == (("yes", "no", "maybe"), ("1", "01"))
    assert data.codes.tolist() == [[0, 1], [1, 0]]


def test_a_missing_marker_the_domain_lists_is_a_category(tmp_path):
    path = write(tmp_path, "m.csv", "root,x\n?,a\nb,a\n")
    domain = write(tmp_path, "m.yaml", "root: [b, '?']\nx: [a]\n")
    assert load_csv(str(path), str(domain)).column("root").tolist() == [1, 0]


def test_columns_keep_their_given_order_and_the_target_must_be_one(survey):
    path, domain, frame = survey
    data = load_csv(str(path), str(domain), columns=["income", "sex"], target="sex")
    assert data.domain.names == ("income", "sex") and data.target == "sex"
    assert np.array_equal(data.codes, expected_codes(frame)[:, [3, 1]])
    with pytest.raises(ConfigError, match=r"target='age'.*add it to dataset.columns"):
        load_csv(str(path), str(domain), columns=["income", "sex"], target="age")
    with pytest.raises(ConfigError, match=r"target='salary'.*one of the columns"):
        load_csv(str(path), str(domain), target="salary")


def test_infer_domain_sorts_numbers_as_numbers_and_leaves_a_note(tmp_path):
    path = write(tmp_path, "kids.csv", "children,colour\n10,red\n9,blue\n2,red\n10,green\n")
    data = load_csv(str(path), infer_domain=True)
    assert data.domain.labels == (("2", "9", "10"), ("blue", "green", "red"))
    assert data.domain.ordinal == ("children",)
    (note,) = data.notes
    assert "children, colour" in note and "private data" in note and "\n" not in note


def test_infer_domain_fills_only_the_columns_the_domain_file_lacks(survey):
    path, _, _ = survey
    partial = write(path.parent, "partial.yaml", "sex: [male, female]\n")
    data = load_csv(str(path), str(partial), infer_domain=True, bins={"age": list(AGE_EDGES)})
    assert data.domain.labels[1] == ("male", "female")
    (note,) = data.notes
    assert "education, income" in note and "age" not in note and "sex" not in note


def test_notes_survive_every_derived_table(tmp_path):
    path = write(tmp_path, "n.csv", "a,b\n" + "".join(f"{i % 3},{i % 2}\n" for i in range(40)))
    data = load_csv(str(path), infer_domain=True, target="b")
    assert data.notes
    train, test = split_train_test(data, 0.25, np.random.default_rng(0))
    for derived in (train, test, data.with_codes(data.codes), data.with_target("a"), data.rows(data.codes[:, 0] > 0)):
        assert derived.notes == data.notes
    assert Tally.of(data).notes == data.notes


def test_a_one_byte_change_of_a_value_changes_the_fingerprint(survey, tmp_path):
    path, domain, _ = survey
    text = path.read_text()
    changed = tmp_path / "changed" / "survey.csv"
    changed.parent.mkdir()
    changed.write_text(text.replace(",male,", ",mole,", 1))  # one byte of one value
    assert len(changed.read_bytes()) == len(path.read_bytes())
    write(tmp_path, "mole.yaml", DOMAIN.replace("[female, male]", "[female, male, mole]"))
    wide = str(tmp_path / "mole.yaml")
    assert load_csv(str(changed), wide).fingerprint() != load_csv(str(path), wide).fingerprint()
    assert (
        load_csv(str(changed), infer_domain=True).fingerprint() != load_csv(str(path), infer_domain=True).fingerprint()
    )
    again = tmp_path / "again" / "survey.csv"
    again.parent.mkdir()
    again.write_text(text)
    assert load_csv(str(again), str(domain)).fingerprint() == load_csv(str(path), str(domain)).fingerprint()


# --- errors: one line naming file, line and column ----------------------------------------------

BAD_FILES = [
    # (file content, domain file or None for infer_domain, line, what the message names)
    ("age,sex\n25,female\n31,\n", DOMAIN, 3, ["column 'sex'", "missing value (an empty field)"]),
    ("age,sex\n25,female\n31,NA\n", DOMAIN, 3, ["column 'sex'", "missing value ('NA')", "list 'NA'"]),
    ("age,sex\n25,female\nn/a,male\n", DOMAIN, 3, ["column 'age'", "missing value ('n/a'); drop or impute"]),
    ("age,sex\n25,female\n31,other\n", DOMAIN, 3, ["column 'sex'", "'other' is not in its domain", "line 2"]),
    ("age,sex\n25,female\n\n130,male\n", DOMAIN, 4, ["column 'age'", "130 is outside the bins' range [0, 120]"]),
    ("age,sex\n-1,female\n", DOMAIN, 2, ["column 'age'", "-1 is outside"]),
    ("age,sex\n25,female\nold,male\n", DOMAIN, 3, ["column 'age'", "'old' is not a number"]),
    ("age,sex\n25,female\n31,male,x\n", DOMAIN, 3, ["expected 2 fields", "found 3"]),
    ("age,sex,age\n25,female,3\n", DOMAIN, 1, ["column 'age' appears twice", "fields 1 and 3"]),
    ("age,,x\n25,female,3\n", None, 1, ["header field 2 is empty"]),
    ("age;sex\n25;female\n", DOMAIN, 1, ["one column", "is the separator ';'?"]),
    ("age,sex\n", DOMAIN, 1, ["no records"]),
    (b"age,s\xe9x\n25,female\n", None, 1, ["header field 2", "not UTF-8"]),
    (b"age,sex\n25,female\n31,m\xe4le\n", DOMAIN, 3, ["column 'sex'", "not UTF-8"]),
    ('age,sex\n25,female\n31,"male\n40,female\n', DOMAIN, 3, ["never closed"]),
    ("age,sex\n25,female\n?,male\n", None, 3, ["column 'age'", "missing value ('?')"]),
]


@pytest.mark.parametrize("content,domain,line,named", BAD_FILES)
def test_bad_content_is_refused_in_one_line_naming_file_line_and_column(tmp_path, content, domain, line, named):
    path = write(tmp_path, "bad.csv", content)
    kwargs: dict = {"infer_domain": True}
    if domain is not None:  # age and sex: the domain file's other columns are not in these tables
        kwargs = {"domain": str(write(tmp_path, "d.yaml", "\n".join(domain.splitlines()[:2]) + "\n"))}
    with pytest.raises(DataFileError) as caught:
        load_csv(str(path), **kwargs)
    message = str(caught.value)
    assert message.startswith(f"{path}, line {line}: "), message
    assert "\n" not in message and caught.value.line == line
    for part in named:
        assert part in message, message


def test_an_empty_file_is_refused(tmp_path):
    path = write(tmp_path, "empty.csv", "\n  \n")
    with pytest.raises(DataFileError, match="is empty"):
        load_csv(str(path), infer_domain=True)


def test_a_parquet_problem_names_the_row_and_column(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (pip install 'dp2pub[parquet]')")
    path = tmp_path / "gaps.parquet"
    pd.DataFrame({"age": [20.0, None, 40.0], "sex": ["f", "m", "f"]}).to_parquet(path, index=False)
    with pytest.raises(DataFileError) as caught:
        load_csv(str(path), infer_domain=True)
    assert str(caught.value) == f"{path}: row 2, column 'age': missing value (null); drop or impute such records"


BAD_DOMAINS = [
    ("- age\n- sex\n", 1, "expected a mapping"),
    ("age: {bins: [0, 18]}\nsex: [female, male, female]\n", 2, "'female' is listed twice"),
    ("age: {bins: [0, 18]}\nsex: [female, male]\nzip: [1, 2]\n", 3, "'zip' is not a column of t.csv"),
    ("age: {bins: [30, 18]}\nsex: [f]\n", 1, "strictly increasing"),
    ("age: {bins: [0, 18, 99], labels: [young]}\nsex: [f]\n", 1, "1 labels for 2 bins"),
    ("age: {bins: [0, 99]}\nage: {bins: [0, 99]}\n", 2, "key 'age' appears twice"),
    ("age: {values: [1], bins: [0, 1]}\n", 1, "expected a list of values"),
    ("age: {bins: [0, 1], ordinal: true}\n", 1, "unknown key 'ordinal'"),
    ("age: [1\n", 2, "not valid YAML"),
]


@pytest.mark.parametrize("text,line,problem", BAD_DOMAINS)
def test_a_bad_domain_file_is_refused_naming_it_and_its_line(tmp_path, text, line, problem):
    table = write(tmp_path, "t.csv", "age,sex\n25,female\n")
    domain = write(tmp_path, "t.yaml", text)
    with pytest.raises(DataFileError) as caught:
        load_csv(str(table), str(domain))
    assert str(caught.value).startswith(f"{domain}, line {line}: ") and problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_json_domain_files_problems_name_it(tmp_path):
    domain = write(tmp_path, "d.json", '{"a": ["x", "y"], "a": ["z"]}')
    with pytest.raises(DataFileError, match="key 'a' appears twice"):
        read_domain_file(domain)
    assert read_domain_file(write(tmp_path, "n.json", '{"a": [1, 1.50, true]}'))["a"][0].labels == ("1", "1.50", "true")


def test_bad_keys_are_refused_naming_the_key(survey, tmp_path):
    path, domain, _ = survey
    cases = [
        (dict(path=None), "path=None"),
        (dict(path=str(tmp_path / "nowhere.csv")), "path="),
        (dict(path=str(path), domain=str(tmp_path / "nowhere.yaml")), "domain="),
        (dict(path=str(path), domain=str(domain), columns=["age"]), "columns=['age']"),
        (dict(path=str(path), domain=str(domain), columns=["age", "zip"]), "columns='zip'"),
        (dict(path=str(path), domain=str(domain), columns="age"), "columns='age'"),
        (dict(path=str(path), domain=str(domain), infer_domain="yes"), "infer_domain='yes'"),
        (dict(path=str(path), bins={"age": [5]}, infer_domain=True), "bins.age=[5]"),
        (dict(path=str(path), bins={"age": [0, "x"]}, infer_domain=True), "bins.age="),
        (dict(path=str(path), bins=[0, 1], infer_domain=True), "bins=[0, 1]"),
        (dict(path=str(path), bins={"zip": [0, 1]}, infer_domain=True), "bins='zip'"),
        (dict(path=str(path), domain=str(domain), bins={"age": [0, 200]}), "bins='age'"),
        (dict(path=str(path), domain=str(domain), sep=";;"), "sep=';;'"),
        (dict(path=str(path), domain=str(domain), target=3), "target=3"),
    ]
    for kwargs, named in cases:
        with pytest.raises(ConfigError) as caught:
            load_csv(**kwargs)
        assert str(caught.value).startswith(named) and "\n" not in str(caught.value), (kwargs, str(caught.value))


def test_without_a_domain_the_message_gives_both_remedies(survey):
    path, _, _ = survey
    with pytest.raises(ConfigError) as caught:
        load_csv(str(path))
    message = str(caught.value)
    assert message.startswith("domain=None") and "age, sex, education, income" in message
    assert (
        "dataset.domain" in message and "dataset.infer_domain=true" in message and "docs/how-to/datasets.md" in message
    )


def test_an_unknown_suffix_needs_a_separator(tmp_path):
    path = write(tmp_path, "t.txt", "a,b\n1,2\n")
    with pytest.raises(ConfigError, match=r"sep=None.*t\.txt"):
        load_csv(str(path), infer_domain=True)
    assert load_csv(str(path), infer_domain=True, sep=",").n == 1
    tsv = write(tmp_path, "t.dat", "a\tb\n1\t2\n")
    assert load_csv(str(tsv), infer_domain=True, sep="tab").d == 2


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    path = write(tmp_path, "t.parquet", b"PAR1")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        csv_table.importlib.util, "find_spec", lambda name: None if name == "pyarrow" else find_spec(name)
    )
    with pytest.raises(ConfigError) as caught:
        load_csv(str(path), infer_domain=True)
    assert str(caught.value).startswith("path=") and "dp2pub[parquet]" in str(caught.value)


# --- a job on a user's table ------------------------------------------------------------------


def job(dataset: dict, mechanism: dict | None = None) -> dict:
    return {
        "seed": 0,
        "epsilon": 2.0,
        "metrics": {"ways": [1, 2], "models": ["nb"]},
        "dataset": {"name": "csv", **dataset},
        "mechanism": mechanism or {"name": "grr"},
    }


def test_a_job_runs_on_a_users_table_and_carries_its_note(survey):
    path, domain, _ = survey
    result = run_job(job({"path": str(path), "domain": str(domain), "target": "income"}))
    assert result.dataset is not None and result.dataset.name == "survey" and result.dataset.n == 300
    assert result.dataset.digest == load_csv(str(path), str(domain), target="income").fingerprint()
    assert "accuracy_nb" in result.metrics and 0 <= result.metrics["tvd_2way"] <= 1
    assert not any("private data" in note for note in result.notes)
    inferred = run_job(job({"path": str(path), "infer_domain": True, "bins": {"age": list(AGE_EDGES)}}))
    assert any("the domain of sex, education, income was read from the private data" in n for n in inferred.notes)


def test_the_job_names_the_dataset_key(survey):
    path, _, _ = survey
    with pytest.raises(ConfigError, match=r"^dataset\.path=None"):
        run_job(job({}))
    with pytest.raises(ConfigError, match=r"^dataset\.domain=None.*dataset\.infer_domain=true"):
        run_job(job({"path": str(path)}))
    with pytest.raises(ConfigError, match=r"^dataset\.delimiter="):
        run_job(job({"path": str(path), "delimiter": ";"}))


@pytest.mark.slow  # the command line end to end
def test_the_command_line_notes_an_inferred_domain_and_reruns_a_changed_table(tmp_path):
    survey_frame().to_csv(tmp_path / "survey.csv", index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [
        "dataset=csv",
        "dataset.path=survey.csv",
        "dataset.infer_domain=true",
        "dataset.bins={age:[0,18,30,50,120]}",
        "metrics.models=[]",
        f"tracking.uri={uri}",
        "tracking.experiment=own",
        "tracking.skip_finished=true",
        "paths.outputs=out",
    ]
    done = run_cli(args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "note: dataset survey: the domain of sex, education, income was read from the private data" in done.stdout
    (run,) = runs_in(uri, "own")
    assert run.info.status == "FINISHED" and run.data.metrics["n_records"] == 300
    assert "private data" in run.data.tags["dp2pub.notes"]
    again = run_cli(args, cwd=tmp_path)
    assert again.returncode == 0 and "skipped" in again.stdout and len(runs_in(uri, "own")) == 1
    table = tmp_path / "survey.csv"
    table.write_text(table.read_text().replace(",male,", ",mole,", 1))  # one value of one record
    changed = run_cli(args, cwd=tmp_path)
    assert changed.returncode == 0 and "skipped" not in changed.stdout
    assert len([r for r in runs_in(uri, "own") if r.info.status == "FINISHED"]) == 2
    refused = run_cli(
        ["dataset=csv", f"tracking.uri={uri}", "tracking.experiment=bad", "paths.outputs=out"], cwd=tmp_path
    )
    assert refused.returncode == 2
    errors = [line for line in refused.stderr.splitlines() if line.startswith("dp2pub: error:")]
    assert len(errors) == 1 and errors[0].startswith("dp2pub: error: dataset.path=None is invalid"), refused.stderr
