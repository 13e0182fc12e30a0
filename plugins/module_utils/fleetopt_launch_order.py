# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's share of the planned variants, and the order of its launches."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

ALWAYS_ON_EVERY_HOST = ("baseline", "baseline_aa")


def host_share(variants, fleet, host, spread=True):
    """The variants `host` measures: the baseline, its share of the others, the A/A.

    Spreading is static: host k of the fleet (sorted by name) takes every n-th variant in catalog order. Every host
    measures its own baseline and A/A, so each of its variants is compared on the host that ran it.
    """
    others = [v for v in variants if v["id"] not in ALWAYS_ON_EVERY_HOST]
    fleet = sorted(fleet or [host])
    if spread and len(fleet) > 1:
        if host not in fleet:
            raise ValueError("host %s is not in the fleet %s" % (host, ", ".join(fleet)))
        others = others[fleet.index(host)::len(fleet)]
    baseline = [v for v in variants if v["id"] == "baseline"]
    aa = [v for v in variants if v["id"] == "baseline_aa"]
    return baseline + others + aa


def launch_order(share, launches):
    """Each variant launched `launches` times, the rounds alternating direction (ABBA).

    Launch-to-launch variance (memory layout, KV pool, graph capture, clocks) reaches the trials only across
    launches; with a linear drift over the campaign, alternating rounds give every variant the same mean position,
    so the drift cannot pose as an effect. Launch 1 keeps the variant's plain cell name.

    With several launches the A/A runs right after the baseline (and, in the reversed rounds, right before it): its
    first pair is measured first, so the campaign can say within minutes what its host can tell, and every
    configuration still has the same mean position. With one launch nothing is balanced, and the A/A stays last, where
    it spans the campaign and so bounds the drift every variant saw.
    """
    if launches > 1:
        share = [v for v in share if v["id"] in ALWAYS_ON_EVERY_HOST] + [
            v for v in share if v["id"] not in ALWAYS_ON_EVERY_HOST]
    runs = []
    for launch in range(1, launches + 1):
        for variant in (share if launch % 2 == 1 else list(reversed(share))):
            run = dict(variant)
            run.update(launch_number=launch, launches=launches,
                       cell_name=variant["id"] if launch == 1 else "%s.launch%d" % (variant["id"], launch))
            runs.append(run)
    return runs
