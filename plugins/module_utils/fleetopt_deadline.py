# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each planned variant's start-up deadline.

The campaign's deadline (campaign_startup_timeout) fits an ordinary start-up; a catalog entry whose start-up is
known to take longer (torch.compile) says so with `startup_timeout_s`, and only its variant waits that long: a
hung baseline is still given up on at the campaign's deadline. A stack inherits the longest deadline of the
entries it composes, since it launches with their flags.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

CAMPAIGN_SETTING = "campaign_startup_timeout"
ENTRY_KEY = "startup_timeout_s"


def seconds(value):
    """`value` as a positive, finite number of seconds, or None when it is not one (a bool is not a number)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def entry_startup_timeout(entry):
    """The entry's own `startup_timeout_s` in seconds, or None without one; ValueError for a bad value."""
    if entry.get(ENTRY_KEY) is None:
        return None
    value = seconds(entry[ENTRY_KEY])
    if value is None:
        raise ValueError("catalog entry %s: %s must be a positive number of seconds, not %r"
                         % (entry.get("id"), ENTRY_KEY, entry[ENTRY_KEY]))
    return value


def check_entries(entries):
    """Refuse a catalog with a bad `startup_timeout_s` anywhere, before anything is planned or started."""
    for entry in entries:
        entry_startup_timeout(entry)


def variant_deadline(default, entry, known):
    """(seconds, where they come from) for the variant of `entry`: the campaign's `default`, or the longest
    `startup_timeout_s` of the entry and of the entries it stacks (`known`: the catalog's entries by id)."""
    candidates = [entry] + [known[i] for i in (entry.get("stacked") or {}).get("composes") or [] if i in known]
    longest, source = default, CAMPAIGN_SETTING
    for candidate in candidates:
        own = entry_startup_timeout(candidate)
        if own is not None and own > longest:
            longest, source = own, "%s of %s" % (ENTRY_KEY, candidate.get("id"))
    return longest, source
