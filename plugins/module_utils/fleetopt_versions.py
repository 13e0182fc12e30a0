# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PEP 440 versions and version ranges, with the standard library only.

The one implementation of "is this installed version inside that range" in fleetopt: the
engine adapters, the plan module and the catalogs' `requires.engine_version` use it on the
controller and on target hosts (where only the standard library is sure to exist, so
`packaging` cannot be imported), and the sglang_stack role uses it through the filter
`fleetopt_version_in_range` (plugins/filter/fleetopt_versions.py).

Ordering is PEP 440's: epoch, then the release (any length, trailing zeros do not count:
0.5 == 0.5.0), then dev < a < b < rc < final < post; a local label (+cu128) sorts after the
same public version. So 0.5.10rc1 < 0.5.10 and 0.5.5.post3 > 0.5.5.

`version_in_range(version, spec)` answers as
`packaging.specifiers.SpecifierSet(spec).contains(version, prereleases=True)`: a
pre-release is never refused for being one (a host that has an rc installed asks about
that rc), but it is compared as the pre-release it is. Consequences, as in packaging:

- 0.5.10rc1 is not in '>=0.5.10' (it sorts before 0.5.10);
- 0.5.10rc1 is not in '<0.5.10' either: an exclusive '<V' excludes V's own pre-releases
  unless V is itself a pre-release (PEP 440); '<=0.5.10' does include it;
- '>V' excludes V with a local label and V's post-releases (unless V is one): 0.5.5.post3
  is not in '>0.5.5', though 0.5.10.post1 is in '>0.5.10rc1';
- '==', '!=' ignore the installed version's local label unless the clause names one;
  '==0.5.*' / '!=0.5.*' match by release prefix; '~=0.5.4' means '>=0.5.4,==0.5.*'.

Clauses are separated by commas; an empty spec (or None) matches every version without
parsing it. A version or clause that is not PEP 440 raises ValueError ('===' is refused).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_PRE = r"(?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)"
_POST = r"(?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)"
_DEV = r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)"
_VERSION = re.compile(
    r"^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    + _PRE + "?" + _POST + "?" + _DEV + "?"
    + r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"^\s*(~=|==|!=|<=|>=|<|>)\s*(\S+?)\s*$")
_WILDCARD = re.compile(r"^v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*\.\*$", re.IGNORECASE)
_PRE_LETTER = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}


class Version:
    """A parsed PEP 440 version; compares (and hashes) by PEP 440 ordering."""

    def __init__(self, text):
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        match = _VERSION.match(text)
        if not match:
            raise ValueError("%r is not a PEP 440 version" % (text,))
        self.epoch = int(match.group("epoch") or 0)
        self.release = tuple(int(n) for n in match.group("release").split("."))
        self.pre = None
        if match.group("pre_l"):
            self.pre = (_PRE_LETTER[match.group("pre_l").lower()], int(match.group("pre_n") or 0))
        self.post = None
        if match.group("post_n1") is not None:
            self.post = int(match.group("post_n1"))
        elif match.group("post_l"):
            self.post = int(match.group("post_n2") or 0)
        self.dev = int(match.group("dev_n") or 0) if match.group("dev_l") else None
        local = match.group("local")
        self.local = tuple(
            int(part) if part.isdigit() else part for part in re.split(r"[-_.]", local.lower())) if local else None
        self._key = self._sort_key()

    def _sort_key(self):
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is None and self.post is None and self.dev is not None:
            pre = (-1,)  # 1.0.dev0 sorts before 1.0a0
        elif self.pre is None:
            pre = (3,)  # a final release sorts after its pre-releases
        else:
            pre = (_PRE_RANK[self.pre[0]], self.pre[1])
        post = -1 if self.post is None else self.post
        dev = (1,) if self.dev is None else (0, self.dev)
        # A local label sorts after none; numeric parts sort after alphanumeric ones.
        local = () if self.local is None else tuple(
            (1, part, "") if isinstance(part, int) else (0, 0, part) for part in self.local)
        return (self.epoch, tuple(release), pre, post, dev, local)

    @property
    def is_prerelease(self):
        return self.pre is not None or self.dev is not None

    @property
    def is_postrelease(self):
        return self.post is not None

    @property
    def public(self):
        """The same version without its local label."""
        return Version(str(self).split("+", 1)[0])

    @property
    def base(self):
        """Epoch and release only."""
        return Version("%d!%s" % (self.epoch, ".".join(str(n) for n in self.release)))

    def __str__(self):
        text = "%d!" % self.epoch if self.epoch else ""
        text += ".".join(str(n) for n in self.release)
        if self.pre is not None:
            text += "%s%d" % self.pre
        if self.post is not None:
            text += ".post%d" % self.post
        if self.dev is not None:
            text += ".dev%d" % self.dev
        if self.local is not None:
            text += "+" + ".".join(str(part) for part in self.local)
        return text

    def __repr__(self):
        return "Version(%r)" % str(self)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, Version) and self._key == other._key

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self._key < other._key

    def __le__(self, other):
        return self._key <= other._key

    def __gt__(self, other):
        return self._key > other._key

    def __ge__(self, other):
        return self._key >= other._key


def parse_version(text):
    """`Version(text)`; raises ValueError when text is not a PEP 440 version."""
    return text if isinstance(text, Version) else Version(text)


def _prefix_match(version, prefix_text):
    """'==prefix.*': same epoch, and the release padded with zeros starts with the prefix."""
    prefix = Version(prefix_text)
    release = version.release + (0,) * max(0, len(prefix.release) - len(version.release))
    return version.epoch == prefix.epoch and release[:len(prefix.release)] == prefix.release


def _bad(clause, spec, why):
    return ValueError("bad version range clause %r in %r: %s" % (clause, spec, why))


def _clause_matches(version, op, target, clause, spec):
    if op in ("==", "!=") and target.endswith(".*"):
        if not _WILDCARD.match(target):
            raise _bad(clause, spec, "a '.*' prefix takes an epoch and release only")
        matched = _prefix_match(version, target[:-2])
        return matched if op == "==" else not matched
    if target.endswith(".*"):
        raise _bad(clause, spec, "only '==' and '!=' take a '.*' prefix")
    try:
        wanted = Version(target)
    except ValueError as exc:
        raise _bad(clause, spec, str(exc))
    if wanted.local is not None and op not in ("==", "!="):
        raise _bad(clause, spec, "only '==' and '!=' take a local version label")
    if op in ("==", "!="):
        equal = (version if wanted.local is not None else version.public) == wanted
        return equal if op == "==" else not equal
    if op == "~=":
        if len(wanted.release) < 2:
            raise _bad(clause, spec, "'~=' needs a release of at least two numbers")
        prefix = "%d!%s" % (wanted.epoch, ".".join(str(n) for n in wanted.release[:-1]))
        return version.public >= wanted and _prefix_match(version, prefix)
    if op == "<=":
        return version.public <= wanted
    if op == ">=":
        return version.public >= wanted
    if op == "<":
        # '<V' does not take V's own pre-releases (V.dev0 and up) unless V is itself one.
        if not wanted.is_prerelease:
            wanted = Version("%s.dev0" % str(wanted).split("+", 1)[0])
        return version < wanted
    # '>V' does not take V with a local label, nor V's post-releases unless V is one (or a dev
    # release, which has none): nothing that shares V's epoch, release and pre-release part.
    if not version > wanted:
        return False
    if wanted.dev is not None or wanted.post is not None:
        return version.public != wanted
    return not (version.epoch == wanted.epoch and version._key[1] == wanted._key[1] and version.pre == wanted.pre)


def parse_spec(spec):
    """'>=0.5.4, <0.5.10' -> [('>=', '0.5.4'), ('<', '0.5.10')]; ValueError on a bad clause."""
    clauses = []
    for clause in str(spec or "").split(","):
        if not clause.strip():
            continue  # as packaging: '>=1.0,' is '>=1.0'
        match = _CLAUSE.match(clause)
        if not match or match.group(2).startswith("="):
            raise _bad(clause.strip(), spec, "expected one of ~= == != <= >= < > and a PEP 440 version")
        clauses.append((match.group(1), match.group(2)))
    return clauses


def version_in_range(version, spec):
    """Whether `version` satisfies every comma-separated clause of `spec` (PEP 440, as
    `SpecifierSet(spec).contains(version, prereleases=True)`); an empty spec matches all."""
    clauses = parse_spec(spec)
    if not clauses:
        return True
    current = parse_version(version)
    result = True
    for op, target in clauses:  # every clause is checked, so a bad one is reported in any case
        if not _clause_matches(current, op, target, op + target, spec):
            result = False
    return result
