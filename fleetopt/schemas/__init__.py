"""The JSON Schemas of a campaign's result files, and their validation.

`cell.schema.json` describes a cell (`fleetopt.cell/1`, cells/<host>/*.json) and `summary.schema.json`
the summary.json that `fleetopt report` builds from the cells. Both ship with the package, so a
reader of results can check what it reads against what fleetopt writes.
"""
import functools
import json
import pathlib

import jsonschema
import referencing
import referencing.jsonschema

FOLDER = pathlib.Path(__file__).resolve().parent
SCHEMAS = {"cell": "cell.schema.json", "summary": "summary.schema.json"}


@functools.lru_cache(maxsize=None)
def load_schema(name):
    """The schema `name` (cell or summary), as a mapping."""
    return json.loads((FOLDER / SCHEMAS[name]).read_text())


@functools.lru_cache(maxsize=None)
def registry():
    """Both schemas under their $id, so that one may refer to the other's definitions (the summary keeps a cell's
    benchmark record)."""
    resources = [referencing.jsonschema.DRAFT202012.create_resource(load_schema(name)) for name in SCHEMAS]
    return referencing.Registry().with_resources((resource.contents["$id"], resource) for resource in resources)


@functools.lru_cache(maxsize=None)
def validator(name):
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry(), format_checker=cls.FORMAT_CHECKER)


def _where(error):
    return "/" + "/".join(str(part) for part in error.absolute_path)


def _deepest(error):
    """An error of "none of the given schemas" (a value that may be null or an object, say) told by the branch that
    fits the value best, so the message names the field that is wrong."""
    return jsonschema.exceptions.best_match([error]) if error.context else error


def errors(name, document):
    """Every way `document` breaks the schema `name`, each as '<JSON pointer>: <message>'; [] when it is valid."""
    found = sorted((_deepest(e) for e in validator(name).iter_errors(document)),
                   key=lambda e: [str(p) for p in e.absolute_path])
    return ["%s: %s" % (_where(e), e.message) for e in found]


def campaign_files(folder):
    """(schema name, path) of every cell and summary.json under `folder` (a campaign folder, or one holding several)."""
    folder = pathlib.Path(folder)
    found = [("cell", path) for path in folder.glob("**/cells/*/*.json")]
    found += [("summary", path) for path in folder.glob("**/summary.json")]
    return sorted(found, key=lambda item: str(item[1]))


def validate_file(name, path):
    """The schema errors of the file at `path`, or its JSON error, each as a line naming the file."""
    path = pathlib.Path(path)
    try:
        document = json.loads(path.read_text())
    except ValueError as exc:
        return ["%s: not valid JSON (%s)" % (path, exc)]
    return ["%s: %s" % (path, line) for line in errors(name, document)]


def validate_folder(folder):
    """(files checked, error lines) for every cell and summary.json under `folder`."""
    files = campaign_files(folder)
    return len(files), [line for name, path in files for line in validate_file(name, path)]


def main(args):
    """`fleetopt validate FOLDER...`: exit 0 when every cell and summary.json under them matches its schema, else 1."""
    checked, problems = 0, []
    for folder in args.folders:
        if not pathlib.Path(folder).is_dir():
            print("fleetopt validate: no folder %s" % folder)
            return 2
        count, found = validate_folder(folder)
        checked += count
        problems += found
    for line in problems:
        print(line)
    print("fleetopt validate: %d file(s) checked, %d error(s)" % (checked, len(problems)))
    return 1 if problems else 0
