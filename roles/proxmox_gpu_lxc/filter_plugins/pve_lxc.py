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
    main, _ = _split_sections(content)
    found = {}
    for line in main:
        if ":" not in line or line.startswith("#"):
            continue
        key, value = line.split(":", 1)
        if key_re.search(key.strip()):
            found[key.strip()] = value.strip()
    return found


class FilterModule:
    def filters(self):
        return {
            "nvidia_driver_version": nvidia_driver_version,
            "pve_manager_version": pve_manager_version,
            "proc_char_majors": proc_char_majors,
            "pve_lxc_conf_merge": pve_lxc_conf_merge,
            "pve_lxc_conf_keys": pve_lxc_conf_keys,
        }
