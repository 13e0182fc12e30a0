"""Every patch's declared `releases` range is proven against the released packages.

Each patch of library/patches/sglang_stack.yml is dry-run (`patch -p1 --dry-run -f`, as
roles/sglang_stack runs it) against the patched files of every release inside its range and of
the nearest release on either side (tests/patch_sources.py). Cold, this downloads about 35
wheels from PyPI (about a minute); warm, the cache under ~/.cache/fleetopt/patch-sources answers
without network in seconds.
"""
import hashlib

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import patch_sources as ps

CATALOG = yaml.safe_load(ps.CATALOG.read_text())
PATCHES = {patch["id"]: patch for patch in CATALOG["patches"]}


def by_id(patch_id, **changes):
    return dict(PATCHES[patch_id], **changes)


@pytest.mark.parametrize("patch_id", sorted(PATCHES))
def test_declared_range_is_proven(patch_id):
    patch = PATCHES[patch_id]
    versions, results = ps.check_patch(patch)
    table = "\n".join("%s %s %s" % (v, *results[v]) for v in sorted(results))
    assert ps.judge(patch, versions, results) == [], table


@pytest.mark.parametrize("patch_id", sorted(PATCHES))
def test_patch_file_matches_its_catalog_entry(patch_id):
    patch = PATCHES[patch_id]
    data = (ps.PATCH_DIR / patch["patch_file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == patch["sha256"]
    assert sorted(set(ps.patch_targets(data.decode()))) == sorted(patch["files"])
    assert Version(patch["written_against"]) in SpecifierSet(patch["releases"])


def test_a_range_reaching_past_the_move_to_quantization_is_refused():
    """The check has teeth: the FP4 patch claimed up to 0.6.8 fails at 0.6.7 (the code moved)."""
    patch = by_id("flashinfer-fp4-quantize-custom-op", releases=">=0.6.0,<0.6.8")
    versions, results = ps.check_patch(patch)
    problems = ps.judge(patch, versions, results)
    assert any("0.6.7 is inside" in p for p in problems), problems
    assert results[Version("0.6.7")][0] == "fails"


def test_a_range_that_stops_short_is_refused():
    """0.6.6 applies: a range ending at 0.6.6 leaves an applicable edge nobody explained."""
    patch = by_id("flashinfer-fp4-quantize-compiler-disable", releases=">=0.6.0,<0.6.6")
    versions, results = ps.check_patch(patch)
    assert ps.judge(patch, versions, results) == [
        "flashinfer-python 0.6.6, just above >=0.6.0,<0.6.6, applies too: widen the range or document why it ends there"]


def test_fuzz_is_not_applying_cleanly():
    """sglang-fp4-prewarm once claimed 0.5.10 and 0.5.11, which take it only with fuzz."""
    patch = by_id("sglang-fp4-prewarm", releases=">=0.5.6,<0.5.12")
    versions, results = ps.check_patch(patch)
    problems = ps.judge(patch, versions, results)
    assert [p.split(" is inside")[0] for p in problems if "is inside" in p] == [
        "sglang 0.5.10", "sglang 0.5.10.post1", "sglang 0.5.11"]


def test_judge_on_made_up_results():
    versions = [Version(v) for v in ("1.0", "1.1", "1.2", "1.2.post1", "1.3", "2.0rc1", "2.0")]
    patch = {"package": "p", "releases": ">=1.1,<1.3", "unnecessary_since": []}
    assert ps.plan(patch["releases"], versions) == (
        [Version("1.1"), Version("1.2"), Version("1.2.post1")], Version("1.0"), Version("1.3"))
    ok = {Version("1.0"): ("fails", ""), Version("1.1"): ("clean", ""), Version("1.2"): ("offset", ""),
          Version("1.2.post1"): ("clean", ""), Version("1.3"): ("fails", "")}
    assert ps.judge(patch, versions, ok) == []
    bad = dict(ok)
    bad[Version("1.3")] = ("clean", "")
    assert len(ps.judge(patch, versions, bad)) == 1
    assert ps.judge(dict(patch, unnecessary_since=[{"package": "p", "version": "1.3"}]), versions, bad) == []
    assert ps.judge(dict(patch, range_edges={"above": {"version": "1.3", "reason": "why"}}), versions, bad) == []
    assert ps.judge(dict(patch, range_edges={"above": {"version": "1.3"}}), versions, bad) != []
    fuzz = dict(ok)
    fuzz[Version("1.2")] = ("fuzz", "with fuzz 1")
    assert len(ps.judge(patch, versions, fuzz)) == 1


def test_parse_index_versions():
    out = "WARNING: x\np (2.0)\nAvailable versions: 2.0, 1.10, 1.9.post1, 1.9\n"
    assert ps.parse_index_versions(out) == [Version(v) for v in ("1.9", "1.9.post1", "1.10", "2.0")]
