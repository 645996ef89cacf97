"""Which software a run used: the lock file, and whether the installed packages match it.

``make`` installs the exact versions of ``requirements.lock`` (written by ``make lock``);
every run records three tags so that a reader can tell whether two runs shared an
environment:

- ``dp2pub.lock_sha256``: the SHA-256 of the lock file beside the package (a source
  checkout), or ``none`` (a wheel install carries no lock file);
- ``dp2pub.env_matches_lock``: ``true`` when every package the lock pins for this platform
  and Python is installed at exactly that version, ``false`` otherwise (the tag
  ``dp2pub.env_mismatch`` then names the first few), ``unknown`` without a lock file;
- ``dp2pub.env_sha256``: the SHA-256 of the sorted ``name==version`` list of every installed
  distribution, which identifies the environment with or without a lock file.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

LOCK_FILE = Path(__file__).resolve().parent.parent / "requirements.lock"


def locked_versions(text: str) -> dict[str, str]:
    """``{name: version}`` of the pins in a hashed requirements file whose environment marker
    holds here (names canonicalized, as ``packaging`` does)."""
    joined = re.sub(r"\\\s*\n", " ", text)  # continuation lines (the --hash options)
    pins: dict[str, str] = {}
    for line in joined.splitlines():
        line = re.sub(r"\s--hash=\S+", "", line.split(" #")[0]).strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        pinned = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if pinned and (requirement.marker is None or requirement.marker.evaluate()):
            pins[canonicalize_name(requirement.name)] = pinned[0]
    return pins


def installed_versions() -> dict[str, str]:
    """``{name: version}`` of every installed distribution (names canonicalized)."""
    return {
        canonicalize_name(dist.metadata["Name"]): dist.version
        for dist in metadata.distributions()
        if dist.metadata["Name"]
    }


def mismatches(pins: dict[str, str], installed: dict[str, str]) -> list[str]:
    """``name locked, installed`` for every pin the installed versions do not meet."""
    return [
        f"{name} {version} locked, {installed.get(name, 'not')} installed"
        for name, version in sorted(pins.items())
        if installed.get(name) != version
    ]


@lru_cache(maxsize=1)
def environment_tags() -> dict[str, str]:
    """The three environment tags of the module docstring (computed once per process)."""
    installed = installed_versions()
    listing = "\n".join(f"{name}=={version}" for name, version in sorted(installed.items()))
    tags = {"dp2pub.env_sha256": hashlib.sha256(listing.encode()).hexdigest()}
    if not LOCK_FILE.is_file():
        return {**tags, "dp2pub.lock_sha256": "none", "dp2pub.env_matches_lock": "unknown"}
    text = LOCK_FILE.read_bytes()
    tags["dp2pub.lock_sha256"] = hashlib.sha256(text).hexdigest()
    wrong = mismatches(locked_versions(text.decode("utf-8")), installed)
    tags["dp2pub.env_matches_lock"] = "false" if wrong else "true"
    if wrong:
        tags["dp2pub.env_mismatch"] = "; ".join(wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
    return tags
