"""The proxmox_gpu_lxc role's filters: host facts and the /etc/pve/lxc/<vmid>.conf merge."""
import importlib.util

from helpers import FIXTURES, ROOT

spec = importlib.util.spec_from_file_location("pve_lxc", ROOT / "roles" / "proxmox_gpu_lxc" / "filter_plugins" / "pve_lxc.py")
pve_lxc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pve_lxc)

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
