"""Where the project's files are, and access to the shared module_utils code.

The engine adapters and the log watcher live in plugins/module_utils so that modules
can ship them to target hosts; the controller imports the very same files through
`ansible.module_utils`, whose package path is extended here.
"""
import pathlib

import ansible.module_utils

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "library"
MODULE_UTILS = ROOT / "plugins" / "module_utils"

if str(MODULE_UTILS) not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(MODULE_UTILS))


def engine_spec(engine):
    import yaml

    path = LIBRARY / "engines" / ("%s.yml" % engine)
    if not path.exists():
        raise SystemExit("fleetopt: no engine spec for %r (looked for %s)" % (engine, path))
    return yaml.safe_load(path.read_text())
