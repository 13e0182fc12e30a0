"""Filters for Proxmox LXC configuration files and NVIDIA host facts (role proxmox_gpu_lxc)."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_NVRM = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")
_PVE = re.compile(r"pve-manager/(\d+\.\d+(?:\.\d+)?)")


def nvidia_driver_version(text):
    """Driver version from /proc/driver/nvidia/version, or '' when none is named."""
    match = _NVRM.search(text or "")
    return match.group(1) if match else ""


def pve_manager_version(text):
    """Proxmox VE version from `pveversion` output, or ''."""
    match = _PVE.search(text or "")
    return match.group(1) if match else ""


def proc_char_majors(text):
    """Map of character-device name -> major from /proc/devices content."""
    majors = {}
    in_char = False
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped == "Character devices:":
            in_char = True
            continue
        if stripped.endswith("devices:"):
            in_char = False
            continue
        if in_char and stripped:
            parts = stripped.split(None, 1)
            if len(parts) == 2 and parts[0].isdigit():
                majors.setdefault(parts[1], int(parts[0]))
    return majors


def cgroup_version(fstype, override="auto"):
    """1 or 2: the cgroup interface whose device rules LXC enforces on the host.

    `fstype` is what `stat -f -c %T /sys/fs/cgroup` prints on the host: `cgroup2fs` on a unified
    (cgroup v2) host, as on Proxmox VE 7 and later; `tmpfs` on a legacy or hybrid host, where the
    devices controller is a cgroup v1 hierarchy (Proxmox VE 6, or a node booted with
    systemd.unified_cgroup_hierarchy=0). `override` ("auto", 1 or 2) wins when it is not "auto".
    """
    if str(override) != "auto":
        if str(override) not in ("1", "2"):
            raise AnsibleFilterError("cgroup version must be auto, 1 or 2, got %r" % (override,))
        return int(override)
    kind = (fstype or "").strip()
    if kind == "cgroup2fs":
        return 2
    if kind == "tmpfs":
        return 1
    raise AnsibleFilterError(
        "cannot tell the host's cgroup mode: /sys/fs/cgroup is %r (expected cgroup2fs for cgroup v2 or "
        "tmpfs for cgroup v1/hybrid); set proxmox_gpu_lxc_cgroup_version to 1 or 2" % (kind,))


def nvidia_device_majors(char_majors, pass_caps=True):
    """Majors (as strings) whose nodes a GPU guest needs: the GPUs and nvidiactl (195, named
    `nvidia` or `nvidia-frontend` in /proc/devices), `nvidia-uvm` (dynamic) and, with `pass_caps`,
    `nvidia-caps` (dynamic) when the host has it."""
    if "nvidia-uvm" not in char_majors:
        raise AnsibleFilterError("nvidia_device_majors: /proc/devices has no nvidia-uvm major")
    majors = [char_majors.get("nvidia", char_majors.get("nvidia-frontend", 195)), char_majors["nvidia-uvm"]]
    if pass_caps and "nvidia-caps" in char_majors:
        majors.append(char_majors["nvidia-caps"])
    return [str(m) for m in majors]


def pve_lxc_gpu_lines(nodes, majors, cgroup_version, caps_dir=False):
    """The raw `lxc.*` lines of /etc/pve/lxc/<vmid>.conf that pass GPUs through.

    One device rule per major, in the form LXC enforces on the host (`lxc.cgroup.devices.allow`
    for cgroup v1, `lxc.cgroup2.devices.allow` for cgroup v2), then one bind mount per device node
    (absolute host paths such as /dev/nvidia0), then the /dev/nvidia-caps directory when
    `caps_dir` is true. Lines are `key: value`, as Proxmox keeps them.
    """
    version = int(cgroup_version)
    if version not in (1, 2):
        raise AnsibleFilterError("pve_lxc_gpu_lines: cgroup_version must be 1 or 2, got %r" % (cgroup_version,))
    key = "lxc.cgroup.devices.allow" if version == 1 else "lxc.cgroup2.devices.allow"
    lines = ["%s: c %s:* rwm" % (key, major) for major in majors]
    for node in nodes:
        if not node.startswith("/"):
            raise AnsibleFilterError("pve_lxc_gpu_lines: %r is not an absolute path" % (node,))
        lines.append("lxc.mount.entry: %s %s none bind,optional,create=file" % (node, node[1:]))
    if caps_dir:
        lines.append("lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir")
    return lines


def pve_to_lxc_conf(lines):
    """Proxmox's `key: value` lines as LXC reads them (`key = value`), as Proxmox hands them over
    when it starts the container."""
    out = []
    for line in lines:
        key, sep, value = line.partition(":")
        if not sep or not key.strip().startswith("lxc."):
            raise AnsibleFilterError("pve_to_lxc_conf: %r is not a raw lxc.* key" % (line,))
        out.append("%s = %s" % (key.strip(), value.strip()))
    return out


def _split_sections(content):
    lines = (content or "").splitlines()
    for index, line in enumerate(lines):
        if line.startswith("["):
            return lines[:index], lines[index:]
    return lines, []


def pve_lxc_conf_merge(content, desired, managed_patterns):
    """Return content whose main section holds `desired` in place of the lines it manages.

    Lines of the main section (before the first `[snapshot]` header) that match any of
    `managed_patterns` are removed; `desired` is appended at the end of the main section,
    where Proxmox itself keeps raw `lxc.*` keys. Snapshot sections are left untouched.
    """
    if not isinstance(desired, (list, tuple)):
        raise AnsibleFilterError("pve_lxc_conf_merge: desired must be a list of lines")
    patterns = [re.compile(p) for p in managed_patterns]
    main, rest = _split_sections(content)
    kept = [line for line in main if not any(p.search(line) for p in patterns)]
    while kept and not kept[-1].strip():
        kept.pop()
    out = kept + list(desired)
    if rest:
        out += [""] + rest
    return "\n".join(out) + "\n"


def pve_lxc_conf_keys(content, pattern=r"^dev\d+$"):
    """Map of key -> value for main-section `key: value` lines whose key matches `pattern`."""
    key_re = re.compile(pattern)
    main = _split_sections(content)[0]
    found = {}
    for line in main:
        if ":" not in line or line.startswith("#"):
            continue
        key, value = line.split(":", 1)
        if key_re.search(key.strip()):
            found[key.strip()] = value.strip()
    return found


def ssh_known_host_keys(pub_text, name):
    """`cat /etc/ssh/ssh_host_*_key.pub` of a container -> known_hosts lines for `name`.

    Each line of a .pub file is `type base64 [comment]`; known_hosts wants `name type base64`.
    Anything that is not a key line (an error message, a blank) is left out.
    """
    entries = []
    for line in (pub_text or "").splitlines():
        fields = line.split()
        if len(fields) >= 2 and (fields[0].startswith("ssh-") or fields[0].startswith("ecdsa-")):
            entries.append({"type": fields[0], "line": "%s %s %s" % (name, fields[0], fields[1])})
    return entries


class FilterModule:
    def filters(self):
        return {
            "ssh_known_host_keys": ssh_known_host_keys,
            "nvidia_driver_version": nvidia_driver_version,
            "pve_manager_version": pve_manager_version,
            "proc_char_majors": proc_char_majors,
            "pve_lxc_conf_merge": pve_lxc_conf_merge,
            "pve_lxc_conf_keys": pve_lxc_conf_keys,
            "cgroup_version": cgroup_version,
            "nvidia_device_majors": nvidia_device_majors,
            "pve_lxc_gpu_lines": pve_lxc_gpu_lines,
            "pve_to_lxc_conf": pve_to_lxc_conf,
        }
