"""Where the project's files are, and access to the collection's module_utils.

The engine adapters and the log watcher live in plugins/module_utils so that modules can ship
them to target hosts; the controller imports the very same files as
`ansible_collections.fleetopt.campaign.plugins.module_utils`. That needs the folder holding
`ansible_collections/fleetopt/campaign` on sys.path: this checkout's `collections/` (whose
`ansible_collections/fleetopt/campaign` is a link to the checkout), or, in an installed
collection, the folder it was installed into.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
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
