"""GPU pass-through on real LXC: the lines the proxmox_gpu_lxc role writes, in a real guest.

The role runs (ansible-playbook, `lxc` method, 2 of the host's 3 GPUs, cgroup mode read from this
machine) against a Proxmox-style /etc/pve/lxc/<vmid>.conf; its NVIDIA facts come from a real H200
host (/proc/devices, so the nvidia-uvm and nvidia-caps majors are the ones the role reads) and
its /dev from fake nodes made with mknod at those majors and the real host's minors and modes.
The `lxc.*` lines it wrote are translated from Proxmox's `key: value` to LXC's `key = value`, as
Proxmox does when it starts a container, and a real LXC guest (busybox root file system, no
network) starts with them. From inside, the guest shows that every passed node is there with its
major and minor, that opening one gives ENXIO (the device rules allow it; no driver answers)
rather than EPERM, that a node the lines do not name is absent, and, as a control, that a node
bound in without a rule gives EPERM, so the rules are enforced.

A second test does the same in an unprivileged guest (Proxmox's default idmap, LXC's
userns.conf) and records what differs there: host modes decide, device rules do not.

The fake nodes live only in a private mount namespace (tests/lxc/private_dev.sh): the host's
/dev is never written to and they vanish with the namespace, also when the test fails or is
killed. The guest is stopped in `finally` if it still runs.
"""
import errno
import importlib.util
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

import pytest
import yaml

from helpers import FIXTURES, ROOT

HERE = pathlib.Path(__file__).resolve().parent
ROLE = ROOT / "roles" / "proxmox_gpu_lxc"
HOST_FILES = ROLE / "molecule" / "default" / "files"  # /proc files of a real H200 host
LS_L = FIXTURES / "gpu" / "ls-l-dev-nvidia.txt"  # `ls -l /dev/nvidia*` of the same host
COMMON_CONF = "/usr/share/lxc/config/common.conf"  # what Proxmox's generated config includes too
PASSED_GPUS = [0, 1]
HOST_GPUS = [0, 1, 2]  # nvidia2 is on the host and must not reach the guest
DENIED = ("fleetopt-denied", 240, 0)  # control node: bound in, no device rule for its major
APPLETS = ["sh", "cat", "echo", "stat", "ls", "test", "[", "true"]

_spec = importlib.util.spec_from_file_location("pve_lxc", ROLE / "filter_plugins" / "pve_lxc.py")
pve_lxc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pve_lxc)


def _run(argv, timeout=120, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def lxc_ready(tmp_path_factory):
    """LXC installed (tests/lxc/prepare_lxc.sh) and able to start a plain guest here.

    Skipped only when this machine cannot run LXC at all (no root, or a guest with no GPU line
    does not start), with the exact error; a failed installation is a failure.
    """
    if os.geteuid() != 0:
        pytest.skip("needs root: it makes device nodes and starts a privileged LXC guest")
    started = time.monotonic()
    prepared = _run([str(HERE / "prepare_lxc.sh")], timeout=900)
    assert prepared.returncode == 0, "prepare_lxc.sh failed:\n%s\n%s" % (prepared.stdout, prepared.stderr)
    prepare_s = time.monotonic() - started
    work = tmp_path_factory.mktemp("lxc-probe")
    _rootfs(work / "rootfs")
    name = "fleetopt-probe-%s" % uuid.uuid4().hex[:8]
    (work / "guest.conf").write_text("\n".join(_base_config(name, work / "rootfs")) + "\n")
    try:
        probe = _run(["lxc-execute", "-n", name, "-P", str(work), "-f", str(work / "guest.conf"),
                      "--", "/bin/true"], timeout=120)
    finally:
        _stop_guest(name, work)
    if probe.returncode != 0:
        pytest.skip("this machine cannot run an LXC guest: lxc-execute exited with %d: %s"
                    % (probe.returncode, (probe.stderr or probe.stdout).strip()))
    return {"prepare_s": prepare_s}


def _base_config(name, rootfs):
    """The guest without GPUs: LXC's common configuration (Proxmox's includes it too), a busybox
    root file system, no network."""
    return [
        "lxc.include = %s" % COMMON_CONF,
        "lxc.uts.name = %s" % name,
        "lxc.rootfs.path = dir:%s" % rootfs,
        "lxc.net.0.type = empty",
        "lxc.autodev = 1",
        "lxc.console.path = none",
    ]


def _host_nodes():
    """(path under /dev, major, minor, mode) of the real host's NVIDIA nodes, from `ls -l`."""
    nodes, folder = [], ""
    for line in LS_L.read_text().splitlines():
        if line.endswith(":"):
            folder = line[:-1].replace("/dev/", "", 1) + "/"
            continue
        match = re.match(r"^c([rwx-]{9})\s+\d+\s+\S+\s+\S+\s+(\d+),\s*(\d+)\s.*?(\S+)$", line)
        if match:
            perms, major, minor, name = match.groups()
            mode = sum(bit for bit, char in zip((0o400, 0o200, 0o100, 0o40, 0o20, 0o10, 4, 2, 1), perms)
                       if char != "-")
            nodes.append((folder + os.path.basename(name), int(major), int(minor), mode))
    return nodes


def _make_nodes(folder, majors):
    """mknod the host's nodes (GPUs 0..2) at the majors /proc/devices gives, the real minors and modes."""
    real = {path: (major, minor, mode) for path, major, minor, mode in _host_nodes()}
    by_name = {"nvidia-uvm": majors["nvidia-uvm"], "nvidia-caps": majors["nvidia-caps"]}
    made = {}
    for path, (major, minor, mode) in real.items():
        # The uvm and caps majors are dynamic: use the ones the role reads, not the listing's.
        if path.startswith("nvidia-uvm"):
            major = by_name["nvidia-uvm"]
        elif path.startswith("nvidia-caps/"):
            major = by_name["nvidia-caps"]
        made[path] = (major, minor, mode)
    for index in HOST_GPUS:
        made["nvidia%d" % index] = (majors["nvidia"], index, 0o666)
    for path, (major, minor, mode) in made.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(target, stat.S_IFCHR | mode, os.makedev(major, minor))
        os.chmod(target, mode)
    name, major, minor = DENIED
    os.mknod(folder / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    return made


def _run_role(work, dev_dir):
    """Run the role as a playbook would; return the raw lxc.* lines it wrote into 200.conf."""
    conf_dir = work / "etc-pve-lxc"
    conf_dir.mkdir()
    (conf_dir / "200.conf").write_text(textwrap.dedent("""\
        arch: amd64
        cores: 8
        hostname: gpu-lxc-200
        memory: 65536
        ostype: debian
        rootfs: local-lvm:vm-200-disk-0,size=200G
        swap: 0
        """))
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "name": "Pass GPUs 0 and 1 to container 200",
        "ansible.builtin.include_role": {"name": "proxmox_gpu_lxc"},
        "vars": {
            "proxmox_gpu_lxc_api_enabled": False,
            "proxmox_gpu_lxc_vmid": 200,
            "proxmox_gpu_lxc_hostname": "gpu-lxc-200",
            "proxmox_gpu_lxc_ip": "192.0.2.200/24",
            "proxmox_gpu_lxc_pve_version": "8.0.4",
            "proxmox_gpu_lxc_passthrough_method": "lxc",
            "proxmox_gpu_lxc_gpu_indexes": PASSED_GPUS,
            "proxmox_gpu_lxc_driver_version_file": str(HOST_FILES / "proc-driver-nvidia-version.txt"),
            "proxmox_gpu_lxc_proc_devices_file": str(HOST_FILES / "proc-devices.txt"),
            "proxmox_gpu_lxc_dev_dir": str(dev_dir),
            "proxmox_gpu_lxc_conf_dir": str(conf_dir),
        }}]}]
    (work / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = _run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                   "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable, str(work / "play.yml")],
                  timeout=300, env=env, cwd=str(ROOT))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    written = (conf_dir / "200.conf").read_text().splitlines()
    return [line for line in written if line.startswith("lxc.")]


def _rootfs(folder):
    for sub in ("bin", "dev", "proc", "sys", "tmp", "etc"):
        (folder / sub).mkdir(parents=True)
    shutil.copy2("/bin/busybox", folder / "bin" / "busybox")
    for applet in APPLETS:
        (folder / "bin" / applet).symlink_to("busybox")


GUEST_SCRIPT = r"""
for p in "$@"; do
  if [ -e "$p" ]; then echo "node $p $(stat -c '%F|%t|%T' "$p")"; else echo "node $p absent"; fi
  if [ -c "$p" ]; then
    echo "read $p $(cat "$p" 2>&1 >/dev/null)"
    echo "write $p $( (echo x >"$p") 2>&1)"
  fi
done
echo guest-done
"""


def _guest_report(output):
    nodes, opened = {}, {}
    for line in output.splitlines():
        parts = line.split(" ", 2)
        if parts[0] == "node":
            nodes[parts[1]] = parts[2] if len(parts) > 2 else ""
        elif parts[0] in ("read", "write"):
            opened[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    return nodes, opened


def _errno_of(message):
    for code in (errno.ENXIO, errno.EPERM, errno.EACCES, errno.ENOENT, errno.ENODEV):
        if os.strerror(code) in message:
            return code
    return None


def _stop_guest(name, lxcpath):
    info = _run(["lxc-info", "-n", name, "-P", str(lxcpath), "-s"], timeout=30)
    if "RUNNING" in info.stdout or "STOPPING" in info.stdout:
        _run(["lxc-stop", "-k", "-n", name, "-P", str(lxcpath)], timeout=60)


def _guest_cgroups(name):
    """cgroups LXC made for this guest (lxc.payload.NAME, lxc.monitor.NAME), in any hierarchy."""
    found = _run(["find", "/sys/fs/cgroup", "-maxdepth", "8", "-type", "d", "-name", "*%s*" % name], timeout=60)
    return sorted(found.stdout.split(), key=len, reverse=True)


def _host_dev_nvidia():
    return sorted(str(p) for p in pathlib.Path("/dev").glob("nvidia*")) + sorted(
        str(p) for p in pathlib.Path("/dev").glob(DENIED[0] + "*"))


@pytest.fixture(scope="module")
def host(lxc_ready):
    """Fake NVIDIA nodes of a 3-GPU host and the lines the role writes for GPUs 0 and 1 on it.

    The work folder is directly under /tmp with mode 0711, so that an unprivileged guest's root
    (host uid 100000) can reach its root file system. Everything in it is removed at the end.
    """
    started = time.monotonic()
    majors = pve_lxc.proc_char_majors((HOST_FILES / "proc-devices.txt").read_text())
    assert (majors["nvidia"], majors["nvidia-uvm"], majors["nvidia-caps"]) == (195, 238, 241)
    cgroup_fs = _run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"]).stdout.strip()
    version = pve_lxc.cgroup_version(cgroup_fs)
    rule_key = "lxc.cgroup.devices.allow" if version == 1 else "lxc.cgroup2.devices.allow"
    host_dev_before = _host_dev_nvidia()
    work = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-lxc-"))
    work.chmod(0o711)
    nodes_dir = work / "nodes"  # the fake host /dev entries; copied into each guest's private /dev
    try:
        made = _make_nodes(nodes_dir, majors)
        lines = _run_role(work, nodes_dir)
        passed = ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
        assert lines == ["%s: c %d:* rwm" % (rule_key, m) for m in (195, 238, 241)] + [
            "lxc.mount.entry: %s %s none bind,optional,create=file" % (p, p[1:]) for p in passed] + [
            "lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir"], lines
        yield {"work": work, "nodes_dir": nodes_dir, "made": made, "lines": lines, "version": version,
               "rule_key": rule_key, "cgroup_fs": cgroup_fs, "role_s": time.monotonic() - started,
               "prepare_s": lxc_ready["prepare_s"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert not work.exists()
    assert _host_dev_nvidia() == host_dev_before  # no node ever reached the host's /dev


class Guests:
    """Starts guests in a private /dev holding the fake nodes; stops them and removes their
    cgroups whatever happens."""

    def __init__(self, host, tag):
        self.host = host
        self.lxcpath = host["work"] / ("lxcpath-" + tag)
        self.lxcpath.mkdir()
        self.private_dev = host["work"] / ("dev-" + tag)
        self.private_dev.mkdir()
        self.names = []

    def start(self, config_of, probe, env=None):
        name = "fleetopt-gpu-%s" % uuid.uuid4().hex[:8]
        self.names.append(name)
        conf = self.host["work"] / ("%s.conf" % name)
        conf.write_text("\n".join(config_of(name)) + "\n")
        started = time.monotonic()
        result = _run(["unshare", "--mount", "--propagation", "private",
                       str(HERE / "private_dev.sh"), str(self.private_dev), str(self.host["nodes_dir"]),
                       shutil.which("lxc-execute"), "-n", name, "-P", str(self.lxcpath), "-f", str(conf),
                       "--", "/bin/sh", "-c", GUEST_SCRIPT, "probe", *probe], timeout=120, env=env)
        result.seconds = time.monotonic() - started
        return result

    def clean(self):
        for name in self.names:
            _stop_guest(name, self.lxcpath)
            for leftover in _guest_cgroups(name):  # deepest first; LXC removes them itself on a normal exit
                subprocess.run(["rmdir", leftover], capture_output=True)

    def assert_clean(self):
        for name in self.names:
            assert "RUNNING" not in _run(["lxc-info", "-n", name, "-P", str(self.lxcpath), "-s"]).stdout
            assert _guest_cgroups(name) == []


@pytest.fixture
def guests(host, request):
    made = Guests(host, request.node.name[-40:].replace("[", "-").replace("]", ""))
    try:
        yield made
    finally:
        made.clean()
    made.assert_clean()


def _probe_paths(host):
    return ["/dev/" + path for path in sorted(host["made"])] + ["/dev/" + DENIED[0]]


def _node_line(major, minor):
    return "character special file|%x|%x" % (major, minor)


def test_the_roles_lines_pass_two_gpus_into_a_real_lxc_guest(host, guests):
    rootfs = host["work"] / "rootfs-privileged"
    _rootfs(rootfs)
    lines, version, rule_key = host["lines"], host["version"], host["rule_key"]

    # A guest started with exactly the role's lines, as LXC gets them from Proxmox.
    guest = guests.start(lambda name: _base_config(name, rootfs) + [
        "# The role's lines, translated as Proxmox does:",
        *pve_lxc.pve_to_lxc_conf(lines),
        "# Test control: a node bound in with no device rule for its major.",
        "lxc.mount.entry = /dev/%s dev/%s none bind,optional,create=file" % (DENIED[0], DENIED[0]),
    ], _probe_paths(host))
    assert guest.returncode == 0 and "guest-done" in guest.stdout, (
        "the guest did not run (rc %s):\n%s\n%s" % (guest.returncode, guest.stdout, guest.stderr))
    nodes, opened = _guest_report(guest.stdout)

    host_drivers = set(pve_lxc.proc_char_majors(pathlib.Path("/proc/devices").read_text()).values())
    for path, (major, minor, _mode) in sorted(host["made"].items()):
        if path == "nvidia2":
            continue
        assert nodes["/dev/" + path] == _node_line(major, minor), (path, nodes)
        for how in ("read", "write"):
            message = opened[(how, "/dev/" + path)]
            code = _errno_of(message)
            if major in host_drivers:  # a real driver owns this major here: allowed means not refused
                assert code != errno.EPERM, (how, path, message)
            else:
                assert code == errno.ENXIO, (how, path, message)
    assert nodes["/dev/nvidia2"] == "absent", nodes  # on the host, not named by the lines
    denied = "/dev/" + DENIED[0]
    assert nodes[denied] == _node_line(*DENIED[1:]), nodes
    assert _errno_of(opened[("read", denied)]) == errno.EPERM, opened[("read", denied)]
    assert _errno_of(opened[("write", denied)]) == errno.EPERM, opened[("write", denied)]

    # The same lines with the rules in the other cgroup form grant nothing on this host: LXC
    # accepts them and the deny-all of common.conf stands (or, on cgroup v2, the guest may refuse).
    other_key = "lxc.cgroup2.devices.allow" if version == 1 else "lxc.cgroup.devices.allow"
    other = [line.replace(rule_key + ":", other_key + ":") for line in lines]
    assert other != lines
    wrong = guests.start(lambda name: _base_config(name, rootfs) + pve_lxc.pve_to_lxc_conf(other),
                         ["/dev/nvidia0"])
    assert "guest-done" in wrong.stdout or version == 2, wrong.stderr  # cgroup v1 takes both forms
    if "guest-done" in wrong.stdout:
        nodes, opened = _guest_report(wrong.stdout)
        assert nodes["/dev/nvidia0"] == _node_line(195, 0), nodes
        assert _errno_of(opened[("read", "/dev/nvidia0")]) == errno.EPERM, opened
    print("\nreal LXC, privileged (%s form, /sys/fs/cgroup is %s): prepare %.1f s, role %.1f s, guests %.1f + %.1f s"
          % (rule_key, host["cgroup_fs"], host["prepare_s"], host["role_s"], guest.seconds, wrong.seconds))


def _without_newuidmap(work):
    """An environment whose PATH has no newuidmap/newgidmap: LXC started by root then writes the
    id maps itself, as on a Proxmox node, instead of asking /etc/subuid (which need not list root)."""
    if not shutil.which("newuidmap"):
        return None
    shim = work / "bin-without-newuidmap"
    if not shim.exists():
        shim.mkdir()
        for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
            for entry in sorted(pathlib.Path(folder).glob("*")):
                if entry.name not in ("newuidmap", "newgidmap") and not (shim / entry.name).exists():
                    (shim / entry.name).symlink_to(entry)
    return dict(os.environ, PATH="/usr/local/sbin:/usr/sbin:/sbin:%s" % shim)


def test_an_unprivileged_guest_gets_the_nodes_and_their_host_modes(host, guests):
    """Proxmox's default container is unprivileged: uids 0-65535 map to 100000-165535, and its
    configuration includes LXC's userns.conf, which empties the device rules of common.conf.

    What that means for the role's lines, measured: the nodes are there (owned by nobody), the
    0666 ones open up to the driver (ENXIO), the MIG capability node of mode 0400 is refused by
    its mode (EACCES), and the device rules restrict nothing (the control node opens too): in
    such a guest the user namespace, not the device cgroup, is what keeps other devices out.
    """
    rootfs = host["work"] / "rootfs-unprivileged"
    _rootfs(rootfs)
    for path in [rootfs, *rootfs.rglob("*")]:
        os.lchown(path, 100000, 100000)
    guest = guests.start(lambda name: _base_config(name, rootfs) + [
        "lxc.include = /usr/share/lxc/config/userns.conf",
        "lxc.idmap = u 0 100000 65536",
        "lxc.idmap = g 0 100000 65536",
        *pve_lxc.pve_to_lxc_conf(host["lines"]),
        "lxc.mount.entry = /dev/%s dev/%s none bind,optional,create=file" % (DENIED[0], DENIED[0]),
    ], _probe_paths(host), env=_without_newuidmap(host["work"]))
    assert guest.returncode == 0 and "guest-done" in guest.stdout, (
        "the guest did not run (rc %s):\n%s\n%s" % (guest.returncode, guest.stdout, guest.stderr))
    nodes, opened = _guest_report(guest.stdout)

    host_drivers = set(pve_lxc.proc_char_majors(pathlib.Path("/proc/devices").read_text()).values())
    for path, (major, minor, mode) in sorted(host["made"].items()):
        if path == "nvidia2":
            continue
        assert nodes["/dev/" + path] == _node_line(major, minor), (path, nodes)
        for how, bit in (("read", 0o004), ("write", 0o002)):
            code = _errno_of(opened[(how, "/dev/" + path)])
            if not mode & bit:  # "other" lacks the permission: the guest's root is not the host's
                assert code == errno.EACCES, (how, path, oct(mode), opened[(how, "/dev/" + path)])
            elif major not in host_drivers:
                assert code == errno.ENXIO, (how, path, opened[(how, "/dev/" + path)])
    assert nodes["/dev/nvidia2"] == "absent", nodes
    assert _errno_of(opened[("read", "/dev/nvidia-caps/nvidia-cap1")]) == errno.EACCES
    assert _errno_of(opened[("read", "/dev/" + DENIED[0])]) == errno.ENXIO  # not EPERM: no rule applies
    print("\nreal LXC, unprivileged: guest %.1f s" % guest.seconds)
