"""Every public name of dp2pub (``dp2pub.__all__``) has a numpydoc docstring with an example
that the suite runs.

The API reference renders these docstrings (mkdocstrings, ``docstring_style: numpy``) and
the suite runs their examples as doctests (pyproject: ``--doctest-modules`` over the modules
listed in ``testpaths``). A name fails here when its docstring loses its ``Parameters``
section (unless it takes none: a class built without arguments, a type annotation), its
``Returns`` section (a function that returns something), or its ``Examples`` with at least
one ``>>>`` line; or when the doctest finder does not find that example in the module that
defines the name, or that module is not among those the doctest run collects. A name in
:data:`EXAMPLE_IN_MODULE` has its example in its module's docstring instead.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import dp2pub
from dp2pub.lazy import exported_origins

#: A numpydoc section header: its title, then a line of dashes as long as the title.
HEADER = re.compile(r"^[ \t]*([A-Z][A-Za-z ]*[a-z])[ \t]*\n[ \t]*(-+)[ \t]*$", re.MULTILINE)
#: The methods of the public classes that are their API: documented with Parameters/Returns.
API_METHODS = ("perturb", "estimate", "transition_matrix", "publish")
#: Public names that are no function or class (so take no parameters), and what they are.
NOT_CALLABLE = {"InputPath": "a type annotation, Annotated[str, ...]"}
#: Public names whose Examples section is their defining module's docstring's, and why.
EXAMPLE_IN_MODULE = {
    "run_job": "tests/test_pipeline.py caps every stage of the job at 40 lines, docstring included",
}


def sections(doc: str | None) -> dict[str, str]:
    """The numpydoc sections of ``doc``: title -> body (up to the next header)."""
    doc = inspect.cleandoc(doc or "")
    headers = [match for match in HEADER.finditer(doc) if len(match.group(2)) == len(match.group(1))]
    ends = [match.start() for match in headers[1:]] + [len(doc)]
    return {match.group(1): doc[match.end() : end] for match, end in zip(headers, ends)}


def takes_parameters(obj: object) -> bool:
    """Whether calling ``obj`` (a function, or a class: its ``__init__`` beside ``self``) takes
    any argument (a class read by its ``__init__``: :class:`dp2pub.Generator` has a
    ``__signature__`` of its instances)."""
    if inspect.isclass(obj):
        return obj.__init__ is not object.__init__ and len(inspect.signature(obj.__init__).parameters) > 1
    return bool(inspect.signature(obj).parameters)


def returns_something(obj: object) -> bool:
    """Whether the function ``obj`` is annotated to return something other than None."""
    returned = inspect.signature(obj).return_annotation
    return returned not in (None, "None", inspect.Signature.empty)


def defining_module(name: str) -> ModuleType:
    """The module that defines ``dp2pub.<name>`` (for a value without ``__module__`` of its
    own, such as a type annotation, the module the package imports it from)."""
    module = getattr(getattr(dp2pub, name), "__module__", "")
    if not module.startswith("dp2pub"):
        module = exported_origins(Path(dp2pub.__file__))[name]
    return importlib.import_module(module)


@pytest.fixture
def doctest_paths(pytestconfig: pytest.Config) -> set[Path]:
    """The files whose doctests a plain ``pytest`` run (``make test``) collects: pyproject's
    testpaths, checked to be collected with ``--doctest-modules``."""
    assert "--doctest-modules" in pytestconfig.getini("addopts")
    return {(pytestconfig.rootpath / path).resolve() for path in pytestconfig.getini("testpaths")}


@pytest.mark.parametrize("name", dp2pub.__all__)
def test_the_docstring_has_numpydoc_sections(name):
    obj = getattr(dp2pub, name)
    found = sections(obj.__doc__)
    if name not in NOT_CALLABLE and takes_parameters(obj):
        assert found.get("Parameters", "").strip(), f"{name}: no Parameters section"
    if inspect.isfunction(obj) and returns_something(obj):
        assert found.get("Returns", "").strip(), f"{name}: no Returns section"
    if name in EXAMPLE_IN_MODULE:
        found = sections(defining_module(name).__doc__)
    assert ">>>" in found.get("Examples", ""), f"{name}: no Examples section with a >>> line"


@pytest.mark.parametrize("name", dp2pub.__all__)
def test_the_example_is_collected_by_the_doctest_run(name, doctest_paths):
    module = defining_module(name)
    assert Path(module.__file__).resolve() in doctest_paths, f"{module.__name__} is not in pyproject's testpaths"
    tests = {test.name: test for test in doctest.DocTestFinder().find(module)}
    where = module.__name__ if name in EXAMPLE_IN_MODULE else f"{module.__name__}.{name}"
    own = tests.get(where) or tests.get(f"{module.__name__}.__test__.{name}")
    assert own is not None and own.examples, f"no doctest of {name} in {module.__name__}"


def test_the_package_docstring_example_runs_as_a_doctest(doctest_paths):
    assert Path(dp2pub.__file__).resolve() in doctest_paths
    assert any(test.examples for test in doctest.DocTestFinder(recurse=False).find(dp2pub))


def test_the_api_methods_of_the_public_classes_say_what_they_take_and_return():
    missing = []
    for name in dp2pub.__all__:
        cls = getattr(dp2pub, name)
        if not inspect.isclass(cls):
            continue
        for method in API_METHODS:
            function = getattr(cls, method, None)
            if function is None:
                continue
            found = sections(function.__doc__)
            needed = ["Returns", *(["Parameters"] if len(inspect.signature(function).parameters) > 1 else [])]
            missing += [f"{name}.{method}: {section}" for section in needed if not found.get(section, "").strip()]
    assert missing == []


def test_sections_reads_numpydoc_headers_only():
    doc = """Summary.

    Parameters
    ----------
    x : int
        A value.

    Returns
    -------
    int
        Its double.

    Examples:
        >>> 1
    """
    assert set(sections(doc)) == {"Parameters", "Returns"}
    assert "Its double." in sections(doc)["Returns"]
