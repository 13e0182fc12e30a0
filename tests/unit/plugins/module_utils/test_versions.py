"""fleetopt_versions (module_utils, standard library only) answers as `packaging` does.

Every comparison and range below is checked against packaging.version.Version and
packaging.specifiers.SpecifierSet(spec).contains(v, prereleases=True), which the
controller venv has and target hosts may not.
"""
import itertools

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version as PVersion

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_versions import Version, parse_spec, version_in_range

# Pre-releases, post, dev, local, epochs, release lengths, spellings packaging normalizes.
VERSIONS = [
    "0.5", "0.5.0", "0.5.0.0", "0.5.4", "0.5.5", "0.5.5.post3", "0.5.5-1", "0.5.5.post0.dev1",
    "0.5.6.dev0", "0.5.6a1", "0.5.6b2", "0.5.6rc1", "0.5.6", "0.5.9", "0.5.10.dev2", "0.5.10a0",
    "0.5.10rc1", "0.5.10rc1+cu128", "0.5.10rc2", "0.5.10", "0.5.10+cu128", "0.5.10+cu128.1",
    "0.5.10+1", "0.5.10+abc", "0.5.10.post1", "0.5.10.post1+cu126", "0.5.10.1", "0.5.23",
    "0.6", "0.6.0", "0.6.0rc0", "0.6.7", "0.6.11.post1", "0.10.2", "0.32.0+cpu", "1.0",
    "1.0.0", "1.0.dev0", "1.0a1.dev3", "1.0.post1.dev0", "1!0.1", "1!0.5.10", "v1.0",
    "1.0-RC1", "1.0.alpha2", "1.0c3", "1.0-r4", "2024.10.1", "0.5.10rc",
]

SPECS = [
    ">=0.5.10", ">0.5.10", "<0.5.10", "<=0.5.10", "==0.5.10", "!=0.5.10",
    ">=0.5.4,<0.5.10", ">=0.5.6,<0.5.10", ">=0.5.4,<0.5.23", ">=0.6.0,<0.6.7", ">=0.5.0,<0.6.12",
    ">=0.10.2", ">0.5.5", ">=0.5.5", "<0.5.5", "<=0.5.5", ">0.5.5.post1", "<0.5.10rc2",
    ">0.5.10rc1", ">=0.5.10rc1", "<0.6", "<=0.6", ">=0.6.0rc0", "==1.0.0", "==1", "!=1.0.0",
    "==0.5.10+cu128", "!=0.5.10+cu128", "==0.5.*", "==0.5.10.*", "!=0.5.*", "==0.6.*", "==1!0.*",
    "~=0.5.4", "~=0.5", "~=0.5.10rc1", ">=1!0.1", "<1!0.1", "> 0.5.9 , < 0.6", ">=0.5.10,",
    ">=1.0.dev0", "<1.0", ">1.0.dev0", "==0.5.10rc1", "<=0.5.10.post1", "<0.5.10.post1",
    ">0.5.10.dev2", ">0.5.10.post1", ">0.5.10", "<1.0.post2", "<0.5.10.dev2", ">0.5.5.post0",
]


@pytest.mark.parametrize("a,b", list(itertools.combinations(VERSIONS, 2)))
def test_ordering_matches_packaging(a, b):
    ours, theirs = (Version(a), Version(b)), (PVersion(a), PVersion(b))
    assert (ours[0] < ours[1], ours[0] == ours[1], ours[0] > ours[1]) == \
        (theirs[0] < theirs[1], theirs[0] == theirs[1], theirs[0] > theirs[1])


@pytest.mark.parametrize("text", VERSIONS)
def test_normal_form_and_flags_match_packaging(text):
    ours, theirs = Version(text), PVersion(text)
    assert str(ours) == str(theirs)
    assert (ours.is_prerelease, ours.is_postrelease, ours.epoch) == \
        (theirs.is_prerelease, theirs.is_postrelease, theirs.epoch)
    assert hash(ours) == hash(Version(str(theirs)))


@pytest.mark.parametrize("spec", SPECS)
def test_ranges_match_packaging_with_prereleases(spec):
    expected = {v: SpecifierSet(spec).contains(v, prereleases=True) for v in VERSIONS}
    assert {v: version_in_range(v, spec) for v in VERSIONS} == expected


# (version, spec, PEP 440 answer): the old comparison of the first three numbers
# (fleetopt_engine.version_tuple) answered the opposite in every one of these.
OLD_TUPLE_WAS_WRONG = [
    ("0.5.10rc1", ">=0.5.10", False),          # an rc comes before its release
    ("0.5.10rc1+cu128", ">=0.5.10", False),
    ("0.5.10.dev2", ">=0.5.10", False),
    ("0.5.10rc1", "==0.5.10", False),
    ("0.5.10rc1", "!=0.5.10", True),
    ("0.5.5.post3", "<=0.5.5", False),         # a post-release comes after its release
    ("0.5.5.post3", ">=0.5.5,<0.5.5.post4", True),
    ("0.5.5.post3", "==0.5.5", False),
    ("0.5.10.1", "<=0.5.10", False),           # a fourth number counts
    ("0.5.10.1", "==0.5.10", False),
    ("0.5.10", ">0.5.10rc1", True),            # the range's own rc bound counts
    ("0.5.10rc1", "<0.5.10rc2", True),
    ("1!0.1", ">=2.0", True),                  # an epoch outranks the release
    ("1.0.0.1", "==1.0.0", False),
]


@pytest.mark.parametrize("version,spec,expected", OLD_TUPLE_WAS_WRONG)
def test_cases_the_old_tuple_comparison_got_wrong(version, spec, expected):
    assert SpecifierSet(spec).contains(version, prereleases=True) is expected
    assert version_in_range(version, spec) is expected
    assert _old_tuple_in_range(version, spec) is not expected


@pytest.mark.parametrize("version,spec,expected", [
    ("0.5.9", ">=0.5.4,<0.5.10", True),
    ("0.5.10", ">=0.5.4,<0.5.10", False),
    ("0.5.10rc1+cu128", ">=0.5.10", False),  # the tuple comparison said True
    ("0.5.10+cu128", ">=0.5.10", True),
    ("0.32.0+cpu", ">=0.10.2", True),
    ("0.9.0", ">=0.10.2", False),
    ("1.0", "==1.0.0", True),
])
def test_version_ranges_fleetopt_uses(version, spec, expected):
    """Moved from test_engine.py, where the tuple comparison lived."""
    assert version_in_range(version, spec) is expected


def test_an_empty_spec_matches_anything_without_parsing_it():
    assert version_in_range("anything", "") is True
    assert version_in_range(None, None) is True


@pytest.mark.parametrize("version", ["", "anything", "0.5.x", "1.0+", "1.0++a", "0..5", "=1.0", None])
def test_a_bad_version_is_a_value_error(version):
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        version_in_range(version, ">=0.5")


@pytest.mark.parametrize("spec", [
    "~1.0", ">=", "0.5.4", ">=0.5 <0.6", "=>0.5", ">=0.5.*", "<0.5+cu128", "~=1",
    "==0.5.*.1", "==0.5a1.*", ">=0.5,<=junk",
])
def test_a_bad_clause_is_a_value_error_as_packaging_refuses_it(spec):
    with pytest.raises(ValueError, match="bad version range clause"):
        version_in_range("0.5.4", spec)
    with pytest.raises(Exception):
        SpecifierSet(spec)


def test_arbitrary_equality_is_refused():
    """'===' compares strings, not versions; no fleetopt range needs it."""
    with pytest.raises(ValueError, match="bad version range clause"):
        version_in_range("0.5.4", "===0.5.4")


def test_a_bad_clause_is_reported_even_after_a_failing_one():
    with pytest.raises(ValueError):
        version_in_range("0.4", ">=0.5,<junk")


def test_parse_spec_splits_clauses():
    assert parse_spec(" >=0.5.4, <0.5.10 ,") == [(">=", "0.5.4"), ("<", "0.5.10")]


def _old_tuple_in_range(version, spec):
    """The comparison fleetopt_engine used before (kept here to show where it was wrong)."""
    import operator
    import re

    def version_tuple(text):
        nums = [int(n) for n in re.findall(r"\d+", (text or "").split("+")[0])[:3]]
        return tuple(nums + [0] * (3 - len(nums)))

    ops = {">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
           ">": operator.gt, "<": operator.lt}
    for clause in spec.split(","):
        match = re.match(r"(>=|<=|==|!=|>|<)\s*(\S+)$", clause.strip())
        if not ops[match.group(1)](version_tuple(version), version_tuple(match.group(2))):
            return False
    return True
