"""Atomic writes for everything the controller writes into a campaign folder."""
import json
import os
import pathlib
import tempfile


def write_atomically(path, text):
    """Write `text` to `path` so that a reader sees the old file or the new one, never half."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_json_atomically(path, data):
    write_atomically(path, json.dumps(data, indent=2) + "\n")
