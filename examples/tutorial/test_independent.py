"""dp2pub's conformance suite on my mechanism: the checks the built-in ones pass."""

from dp2pub.testing import PublisherCase, parametrize_with_checks

from independent import Independent


@parametrize_with_checks(publishers=[PublisherCase(Independent, bad={"min_count": -1.0})])
def test_conformance(check):
    check()
