"""Where the project's files are, and access to the collection's module_utils.

The engine adapters and the log watcher live in plugins/module_utils so that modules can ship
them to target hosts; the controller imports the very same files as
`ansible_collections.fleetopt.campaign.plugins.module_utils`. That needs the folder holding
`ansible_collections/fleetopt/campaign` on sys.path: this checkout's `collections/` (whose
`ansible_collections/fleetopt/campaign` is a link to the checkout), or, in an installed
collection, the folder it was installed into. A package installed alone (`pip install .`) finds
its project through FLEETOPT_HOME or the current folder (project_root).
"""
import os
import pathlib
import sys


def is_project(path):
    """A fleetopt checkout or installed collection: its data (library/) and its module_utils."""
    return (path / "library").is_dir() and (path / "plugins" / "module_utils").is_dir()


def project_root(package_dir=None, environ=None, cwd=None):
    """The project fleetopt works in.

    An editable install, a checkout and an installed collection hold the package inside the project.
    `pip install .` copies the package alone: then $FLEETOPT_HOME names the project, or the current
    folder is in one.
    """
    package_dir = pathlib.Path(package_dir or pathlib.Path(__file__).resolve().parent)
    environ = os.environ if environ is None else environ
    if is_project(package_dir.parent):
        return package_dir.parent
    if environ.get("FLEETOPT_HOME"):
        home = pathlib.Path(environ["FLEETOPT_HOME"]).expanduser().resolve()
        if is_project(home):
            return home
        raise SystemExit("fleetopt: FLEETOPT_HOME=%s is not a fleetopt checkout or collection "
                         "(no library/ or plugins/module_utils/)" % home)
    here = pathlib.Path(cwd or os.getcwd()).resolve()
    for folder in [here] + list(here.parents):
        if is_project(folder):
            return folder
    sys.stderr.write("fleetopt: installed without its project, and %s is not in one: run it in a fleetopt "
                     "checkout or installed collection, or set FLEETOPT_HOME to one\n" % here)
    raise SystemExit(2)


ROOT = project_root()
LIBRARY = ROOT / "library"
MODULE_UTILS = ROOT / "plugins" / "module_utils"


def collections_dir(root=ROOT):
    if root.parent.name == "fleetopt" and root.parent.parent.name == "ansible_collections":
        return root.parent.parent.parent
    return root / "collections"


if str(collections_dir()) not in sys.path:
    sys.path.append(str(collections_dir()))


def engine_spec(engine):
    import yaml

    path = LIBRARY / "engines" / ("%s.yml" % engine)
    if not path.exists():
        raise SystemExit("fleetopt: no engine spec for %r (looked for %s)" % (engine, path))
    return yaml.safe_load(path.read_text())
