"""The proxmox_gpu_lxc role's filters: host facts and the /etc/pve/lxc/<vmid>.conf merge."""
import importlib.util

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from helpers import FIXTURES, ROOT

spec = importlib.util.spec_from_file_location("pve_lxc", ROOT / "roles" / "proxmox_gpu_lxc" / "filter_plugins" / "pve_lxc.py")
pve_lxc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pve_lxc)
MOLECULE_FILES = ROOT / "roles" / "proxmox_gpu_lxc" / "molecule" / "default" / "files"

PROC_DEVICES = """Character devices:
  1 mem
195 nvidia-frontend
238 nvidia-uvm
241 nvidia-caps
Block devices:
  8 sd
238 not-a-char-device
"""
MANAGED = [r"^lxc\.cgroup2\.devices\.allow: c (195|238|241):", r"^lxc\.mount\.entry: /dev/nvidia"]
CONF = """arch: amd64
cores: 16
lxc.cgroup2.devices.allow: c 195:* rwm
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
lxc.apparmor.profile: unconfined

[before-upgrade]
lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file
"""
DESIRED = [
    "lxc.cgroup2.devices.allow: c 195:* rwm",
    "lxc.cgroup2.devices.allow: c 238:* rwm",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
]


def test_driver_version_of_a_real_host():
    text = (FIXTURES / "gpu" / "proc-driver-nvidia-version.txt").read_text()
    assert pve_lxc.nvidia_driver_version(text) == "580.159.04"
    assert pve_lxc.nvidia_driver_version("") == ""


def test_character_majors_ignore_block_devices():
    majors = pve_lxc.proc_char_majors(PROC_DEVICES)
    assert majors["nvidia-uvm"] == 238 and majors["nvidia-caps"] == 241 and majors["nvidia-frontend"] == 195
    assert "not-a-char-device" not in majors


def test_pve_version():
    assert pve_lxc.pve_manager_version("pve-manager/8.2.2/9355359cd7afbae4 (running kernel: 6.8.4-2-pve)") == "8.2.2"


def test_merge_replaces_managed_lines_keeps_the_rest_and_snapshots_and_is_idempotent():
    merged = pve_lxc.pve_lxc_conf_merge(CONF, DESIRED, MANAGED)
    main, snapshot = merged.split("[before-upgrade]")
    assert main.splitlines()[:3] == ["arch: amd64", "cores: 16", "lxc.apparmor.profile: unconfined"]
    assert main.strip().splitlines()[3:] == DESIRED
    assert snapshot == "\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n"
    assert pve_lxc.pve_lxc_conf_merge(merged, DESIRED, MANAGED) == merged


def test_merge_with_nothing_desired_removes_what_it_manages():
    cleared = pve_lxc.pve_lxc_conf_merge(CONF, [], MANAGED)
    assert "nvidia" not in cleared.split("[before-upgrade]")[0]


def test_conf_keys_read_the_main_section_only():
    conf = "dev0: /dev/nvidia0\ndev1: /dev/nvidiactl\nmemory: 4096\n[snap]\ndev7: /dev/nvidia7\n"
    assert pve_lxc.pve_lxc_conf_keys(conf) == {"dev0": "/dev/nvidia0", "dev1": "/dev/nvidiactl"}


# Device rules in the form the host's cgroup mode enforces.

TWO_GPUS = ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
MOUNTS = [
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir",
]


def test_cgroup_version_from_the_hosts_cgroup_file_system():
    assert pve_lxc.cgroup_version("cgroup2fs\n") == 2  # unified: Proxmox VE 7 and later
    assert pve_lxc.cgroup_version("tmpfs") == 1  # legacy or hybrid: the devices controller is v1
    assert pve_lxc.cgroup_version("cgroup2fs", "1") == 1  # the role variable overrides
    assert pve_lxc.cgroup_version("", 2) == 2  # no fact gathered when overridden
    with pytest.raises(AnsibleFilterError, match="set proxmox_gpu_lxc_cgroup_version"):
        pve_lxc.cgroup_version("ext4")
    with pytest.raises(AnsibleFilterError):
        pve_lxc.cgroup_version("tmpfs", "3")


def test_device_majors_as_the_role_reads_them_from_a_real_host():
    majors = pve_lxc.proc_char_majors((MOLECULE_FILES / "proc-devices.txt").read_text())
    assert pve_lxc.nvidia_device_majors(majors) == ["195", "238", "241"]
    assert pve_lxc.nvidia_device_majors(majors, pass_caps=False) == ["195", "238"]
    assert pve_lxc.nvidia_device_majors(pve_lxc.proc_char_majors(PROC_DEVICES)) == ["195", "238", "241"]
    with pytest.raises(AnsibleFilterError, match="nvidia-uvm"):
        pve_lxc.nvidia_device_majors({"nvidia": 195})


def test_cgroup_v2_form_of_the_lines_for_two_gpus():
    lines = pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195", "238", "241"], 2, caps_dir=True)
    assert lines == ["lxc.cgroup2.devices.allow: c 195:* rwm",
                     "lxc.cgroup2.devices.allow: c 238:* rwm",
                     "lxc.cgroup2.devices.allow: c 241:* rwm"] + MOUNTS


def test_cgroup_v1_form_of_the_lines_for_two_gpus():
    lines = pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195", "238", "241"], "1", caps_dir=True)
    assert lines == ["lxc.cgroup.devices.allow: c 195:* rwm",
                     "lxc.cgroup.devices.allow: c 238:* rwm",
                     "lxc.cgroup.devices.allow: c 241:* rwm"] + MOUNTS
    assert pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195", "238"], 1)[-1].startswith(
        "lxc.mount.entry: /dev/nvidia-uvm-tools ")
    with pytest.raises(AnsibleFilterError):
        pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195"], 3)


def test_the_role_owns_rules_of_either_form_so_a_mode_change_leaves_no_stale_rule():
    patterns = yaml.safe_load((ROOT / "roles" / "proxmox_gpu_lxc" / "vars" / "main.yml").read_text())[
        "_proxmox_gpu_lxc_managed_lxc_patterns"]
    patterns = [p.replace('{{ _proxmox_gpu_lxc_majors | join("|") }}', "195|238|241") for p in patterns]
    v2 = pve_lxc.pve_lxc_conf_merge("arch: amd64\n", pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195", "238"], 2), patterns)
    v1_lines = pve_lxc.pve_lxc_gpu_lines(TWO_GPUS, ["195", "238"], 1)
    assert pve_lxc.pve_lxc_conf_merge(v2, v1_lines, patterns) == "\n".join(["arch: amd64"] + v1_lines) + "\n"


def test_proxmox_lines_as_lxc_reads_them():
    assert pve_lxc.pve_to_lxc_conf(["lxc.cgroup.devices.allow: c 195:* rwm",
                                    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file"]) == [
        "lxc.cgroup.devices.allow = c 195:* rwm",
        "lxc.mount.entry = /dev/nvidia0 dev/nvidia0 none bind,optional,create=file"]
    with pytest.raises(AnsibleFilterError):
        pve_lxc.pve_to_lxc_conf(["memory: 4096"])


def test_container_host_keys_become_known_hosts_lines_for_the_name_ssh_uses():
    pub = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 root@gpu-lxc-200\n"
           "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTI= root@gpu-lxc-200\n"
           "cat: /etc/ssh/ssh_host_dsa_key.pub: No such file or directory\n\n"
           "ssh-rsa AAAAB3NzaC1yc2E= root@gpu-lxc-200\n")
    entries = pve_lxc.ssh_known_host_keys(pub, "192.0.2.20")
    assert [e["type"] for e in entries] == ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"]
    assert entries[0]["line"] == "192.0.2.20 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0"
    assert pve_lxc.ssh_known_host_keys("", "x") == []
