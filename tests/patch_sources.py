"""Prove each source patch's declared `releases` range against the released packages (issue 11).

For a patch of library/patches/sglang_stack.yml: list the package's releases on PyPI (`pip index
versions`), take every release inside `releases` plus the nearest release just below and just
above it, fetch each release's wheel (`pip download --no-deps --only-binary=:all:`, the sdist
where there is no wheel), extract only the files the patch touches, laid out as in
site-packages, and run `patch -p1 --dry-run -f` there, as roles/sglang_stack does.

Cache: ~/.cache/fleetopt/patch-sources/<package>/<version>/ holds the extracted files (under
`site-packages/`) and `source.json` (the distribution file, its sha256, which requested files it
lacks); <package>/index.json holds the release list. Entries are built in a temporary
directory beside their final place and renamed into it, so concurrent runs never see half an
entry. A warm cache needs no network: the release list is refreshed after INDEX_TTL_S (or
with FLEETOPT_PATCH_SOURCES_REFRESH=1), and a failed refresh falls back to the cached list.
FLEETOPT_PATCH_SOURCES_CACHE moves the cache.

Run as a script for the per-version table: `.venv/bin/python tests/patch_sources.py`.
"""
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

ROOT = pathlib.Path(__file__).resolve().parents[1]
CATALOG = ROOT / "library" / "patches" / "sglang_stack.yml"
PATCH_DIR = ROOT / "roles" / "sglang_stack" / "files" / "patches"
INDEX_TTL_S = 24 * 3600
PIP_NETWORK = ["--timeout", "20", "--retries", "2"]


def cache_root():
    env = os.environ.get("FLEETOPT_PATCH_SOURCES_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "fleetopt" / "patch-sources"


def _pip(*args):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


# --- the release list ----------------------------------------------------------------------

def parse_index_versions(output):
    """Versions from `pip index versions` output ("Available versions: 1.2, 1.1, ...")."""
    for line in output.splitlines():
        if line.startswith("Available versions:"):
            out = []
            for item in line.split(":", 1)[1].split(","):
                try:
                    out.append(Version(item.strip()))
                except InvalidVersion:
                    pass
            return sorted(set(out))
    raise ValueError("no 'Available versions:' line in pip's output:\n" + output)


def released_versions(package, pre=False, root=None):
    """Every release of `package` on the index, oldest first (pre-releases only when `pre`)."""
    root = root or cache_root()
    path = root / package / ("index-pre.json" if pre else "index.json")
    cached = None
    if path.exists():
        cached = json.loads(path.read_text())
        fresh = time.time() - cached["fetched_at"] < INDEX_TTL_S
        if fresh and os.environ.get("FLEETOPT_PATCH_SOURCES_REFRESH") != "1":
            return [Version(v) for v in cached["versions"]]
    res = _pip("index", "versions", package, *(["--pre"] if pre else []), *PIP_NETWORK)
    try:
        if res.returncode != 0:
            raise ValueError(res.stdout + res.stderr)
        versions = parse_index_versions(res.stdout)
    except ValueError:
        if cached:  # offline, or the index is down: the list we had is still the best answer
            return [Version(v) for v in cached["versions"]]
        raise
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, json.dumps({"fetched_at": time.time(), "versions": [str(v) for v in versions]}))
    return versions


def _write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


# --- sources -------------------------------------------------------------------------------

def patch_targets(patch_text):
    """Paths the unified diff touches, as `patch -p1` resolves them (the `+++ b/...` lines)."""
    out = []
    for line in patch_text.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            out.append(name.split("/", 1)[1] if "/" in name else name)
    return out


def _member_for(names, path, sdist):
    if not sdist:
        return path if path in names else None
    # sdists: <name>-<version>/<anything>/path; the shortest such member is the package's own
    hits = sorted((n for n in names if n == path or n.endswith("/" + path)), key=len)
    return hits[0] if hits else None


def _download(package, version, dest):
    """The release's wheel through pip; where it has none, its sdist (pip would build the sdist's
    metadata, which old sdists fail at, so that one comes from PyPI's simple API, sha256-checked)."""
    spec = "%s==%s" % (package, version)
    res = _pip("download", "--no-deps", "--only-binary=:all:", "-d", str(dest), *PIP_NETWORK, spec)
    files = [p for p in dest.iterdir() if p.is_file()] if dest.exists() else []
    if res.returncode == 0 and len(files) == 1:
        return files[0]
    import urllib.request

    req = urllib.request.Request("https://pypi.org/simple/%s/" % package,
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        index = json.load(resp)
    prefix = "%s-%s." % (re.sub(r"[-_.]+", "_", package), version)
    sdists = [f for f in index["files"] if f["filename"].startswith(prefix) and f["filename"].endswith(".tar.gz")
              and not f.get("yanked")]
    if not sdists:
        raise RuntimeError("%s: no wheel for this platform and no sdist:\n%s" % (spec, res.stderr[-2000:]))
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / sdists[0]["filename"]
    with urllib.request.urlopen(sdists[0]["url"], timeout=120) as resp:
        path.write_bytes(resp.read())
    if hashlib.sha256(path.read_bytes()).hexdigest() != sdists[0]["hashes"]["sha256"]:
        raise RuntimeError("%s: sha256 of %s does not match PyPI's" % (spec, path.name))
    return path


def _extract(dist, files, dest):
    """Copy `files` (site-packages paths) out of the wheel or sdist into dest; returns the missing ones."""
    missing = []
    if dist.name.endswith(".whl") or dist.name.endswith(".zip"):
        with zipfile.ZipFile(dist) as zf:
            names = set(zf.namelist())
            for path in files:
                member = _member_for(names, path, sdist=not dist.name.endswith(".whl"))
                if member is None:
                    missing.append(path)
                    continue
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(member))
    else:
        with tarfile.open(dist) as tf:
            members = {m.name: m for m in tf.getmembers() if m.isfile()}
            for path in files:
                member = _member_for(members, path, sdist=True)
                if member is None:
                    missing.append(path)
                    continue
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tf.extractfile(members[member]).read())
    return missing


def source_tree(package, version, files, root=None):
    """site-packages-like directory holding `files` of `package`==`version` (cached)."""
    root = root or cache_root()
    entry = root / package / str(version)
    manifest = entry / "source.json"
    old = None
    if manifest.exists():
        old = json.loads(manifest.read_text())
        if set(files) <= set(old["requested"]):
            return entry / "site-packages"
    (root / package).mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(dir=root / package, prefix=".tmp-%s-" % version))
    try:
        dist = _download(package, version, tmp / "download")
        requested = sorted(set(files) | set(old["requested"] if old else []))
        missing = _extract(dist, requested, tmp / "site-packages")
        (tmp / "site-packages").mkdir(exist_ok=True)
        (tmp / "source.json").write_text(json.dumps({
            "package": package, "version": str(version), "distribution": dist.name,
            "sha256": hashlib.sha256(dist.read_bytes()).hexdigest(),
            "requested": requested, "missing": missing}, indent=1))
        shutil.rmtree(tmp / "download")
        if old is not None:  # the catalog asks for more files than the entry has: replace it
            stale = entry.with_name(".stale-%s-%d" % (version, os.getpid()))
            try:
                os.rename(entry, stale)
                shutil.rmtree(stale, ignore_errors=True)
            except FileNotFoundError:
                pass
        try:
            os.rename(tmp, entry)
        except OSError:  # a concurrent run finished first; its entry is as good as ours
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry / "site-packages"


# --- applying ------------------------------------------------------------------------------

def dry_run(patch_text, tree):
    """`patch -p1 --dry-run -f` in tree, as roles/sglang_stack runs it: (status, detail).

    status: clean | offset (applies, hunks moved) | fuzz (applies only by ignoring context
    lines) | fails."""
    res = subprocess.run(["patch", "-p1", "--dry-run", "-f", "-d", str(tree)],
                         input=patch_text, capture_output=True, text=True)
    out = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        if "can't find file to patch" in out or "No such file" in out:
            return "fails", "file absent"
        failed = re.findall(r"Hunk #(\d+) FAILED", out)
        return "fails", ("hunks %s failed" % ",".join(failed)) if failed else out.splitlines()[-1]
    if "fuzz" in out:
        return "fuzz", "; ".join(l.strip() for l in out.splitlines() if "fuzz" in l)
    offsets = re.findall(r"offset (-?\d+) line", out)
    if offsets:
        return "offset", "offset " + ",".join(offsets)
    return "clean", ""


APPLIES = ("clean", "offset")


# --- judging a range -----------------------------------------------------------------------

def plan(releases, versions):
    """(inside, below, above): releases inside the range and the nearest ones outside it."""
    spec = SpecifierSet(releases)
    if any(Version(s.version).is_prerelease for s in spec):
        spec.prereleases = True
    inside = [v for v in versions if v in spec]
    if not inside:
        return [], None, None
    below = [v for v in versions if v < inside[0]]
    above = [v for v in versions if v > inside[-1] and v not in spec]
    return inside, (below[-1] if below else None), (above[0] if above else None)


def edge_documented(patch, edge, side):
    """Why applying at an edge release is fine: the fix is upstream from there (above only), or
    the catalog's `range_edges` names that release with a reason."""
    if side == "above":
        for fix in patch.get("unnecessary_since") or []:
            if fix["package"] == patch["package"] and Version(fix["version"]) <= edge:
                return True
    note = (patch.get("range_edges") or {}).get(side) or {}
    return bool(note.get("reason")) and Version(str(note.get("version"))) == edge


def judge(patch, versions, results):
    """Problems with `releases`, given {version: (status, detail)} for the inside and edge
    releases: an empty list means the range is proven."""
    inside, below, above = plan(patch["releases"], versions)
    problems = []
    if not inside:
        problems.append("no release of %s is inside %s" % (patch["package"], patch["releases"]))
    for v in inside:
        status, detail = results[v]
        if status not in APPLIES:
            problems.append("%s %s is inside %s but the patch does not apply cleanly (%s: %s)"
                            % (patch["package"], v, patch["releases"], status, detail))
    for side, edge in (("below", below), ("above", above)):
        if edge is None:
            if side == "above":
                problems.append("no release above %s: the range is open-ended, the newest release applies"
                                % patch["releases"])
            continue
        status, _ = results[edge]
        if status in APPLIES and not edge_documented(patch, edge, side):
            problems.append("%s %s, just %s %s, applies too: widen the range or document why it ends there"
                            % (patch["package"], edge, side, patch["releases"]))
    return problems


def check_patch(patch, versions=None, root=None):
    """Dry-run `patch` against every release it needs: (versions, {version: (status, detail)})."""
    text = (PATCH_DIR / patch["patch_file"]).read_text()
    if versions is None:
        pre = any(Version(s.version).is_prerelease for s in SpecifierSet(patch["releases"]))
        versions = released_versions(patch["package"], pre=pre, root=root)
    inside, below, above = plan(patch["releases"], versions)
    results = {}
    for v in [below, *inside, above]:
        if v is not None:
            results[v] = dry_run(text, source_tree(patch["package"], v, patch["files"], root=root))
    return versions, results


def main():
    import yaml

    catalog = yaml.safe_load(CATALOG.read_text())
    status = 0
    for patch in catalog["patches"]:
        versions, results = check_patch(patch)
        inside, below, above = plan(patch["releases"], versions)
        print("\n%s (%s %s)" % (patch["id"], patch["package"], patch["releases"]))
        for v in sorted(results):
            where = "below" if v == below else "above" if v == above else "inside"
            print("  %-14s %-7s %-7s %s" % (v, where, *results[v]))
        for problem in judge(patch, versions, results):
            status = 1
            print("  PROBLEM: " + problem)
    return status


if __name__ == "__main__":
    sys.exit(main())
