"""The model_store role: a model copied from a folder, a second run that changes nothing, a clear
error when the model is missing with no source, and a tarball served over loopback."""
import http.server
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import threading

import pytest

from helpers import ROOT


PLAY = """
- name: Make sure the model is there
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: model_store
"""


def run_role(tmp_path, **variables):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_ROLES_PATH=str(ROOT / "roles"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ["PATH"]))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(play),
                           "-e", json.dumps(variables)], cwd=str(ROOT), env=env, capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def changed(output):
    return int(output.rsplit("changed=", 1)[1].split()[0])


def make_model(folder):
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    (folder / "tokenizer.json").write_text("{}")
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))


def test_a_model_is_copied_once_and_a_second_run_changes_nothing(tmp_path):
    make_model(tmp_path / "src")
    dest = tmp_path / "models" / "tiny"
    rc, output = run_role(tmp_path, model_store_src=str(tmp_path / "src"), model_store_dest=str(dest))
    assert rc == 0, output[-3000:]
    assert (dest / "model.safetensors").read_bytes() == (tmp_path / "src" / "model.safetensors").read_bytes()
    assert (dest / "config.json").exists()
    rc, output = run_role(tmp_path, model_store_src=str(tmp_path / "src"), model_store_dest=str(dest))
    assert rc == 0 and changed(output) == 0, output[-3000:]


def test_a_missing_model_without_a_source_is_a_clear_error(tmp_path):
    rc, output = run_role(tmp_path, model_store_dest=str(tmp_path / "nowhere"))
    assert rc != 0
    assert "the model directory %s is missing on localhost" % (tmp_path / "nowhere") in output
    assert "never downloads from a model hub" in output


def test_a_model_is_unpacked_from_a_tarball_served_over_loopback(tmp_path):
    make_model(tmp_path / "src")
    (tmp_path / "serve").mkdir()
    with tarfile.open(tmp_path / "serve" / "model.tar.gz", "w:gz") as tar:
        for path in (tmp_path / "src").iterdir():
            tar.add(path, arcname=path.name)
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path / "serve"), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dest = tmp_path / "models" / "from-url"
        rc, output = run_role(tmp_path, model_store_dest=str(dest),
                              model_store_url="http://127.0.0.1:%d/model.tar.gz" % server.server_address[1])
    finally:
        server.shutdown()
    assert rc == 0, output[-3000:]
    assert (dest / "config.json").exists() and (dest / "model.safetensors").stat().st_size == 4096
    assert not (dest / ".model-store-download").exists()
