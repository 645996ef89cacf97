"""Fixtures shared by the publisher tests."""

from tests.publish.test_kanonymity import toy_files  # noqa: F401 (a fixture the privacy-model tests use)
