# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a stage of the stack stage measures, decided on the controller (the campaign role's stacked.yml only
reads the files and asserts them).

Filter `fleetopt_stacked_variants`: the stacked variants a stage measures, from the recommendation it reads.

    {{ _campaign_recommendation | fleetopt_stacked_variants(campaign_stack_step, campaign_recommended | length > 0) }}
    -> [{'id': 'stack', 'title': 'Stack: a + b', 'flags': {...}, 'stacked': {...}, ...}] or []

Filter `fleetopt_stack_skip`: the hosts that measure no stack, from the hosts' records (hosts/<host>.json).

    {{ _campaign_records | fleetopt_stack_skip }}  -> ['gpu-b', 'gpu-c']
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

# A host whose record says one of these did not finish its share of the matrix: it measures no stack, and its
# record keeps saying why.
UNFINISHED = ("unreachable", "unhealthy", "failed")


def fleetopt_stacked_variants(recommendation, step=1, verify=False):
    """The stacked variants stage `step` measures (a list of catalog entries, at most one).

    Verifying an earlier recommendation (`verify`): its `verify_variant`, in stage 1 only; there is no greedy search
    to go on with. Otherwise `recommendation` is this campaign's own (recommended.yml, {} when no stack was asked
    for): stage 1 measures its `stacked_variant`, a later stage only while its `outcome` is `searching` (the
    `stacked_variant` is then the greedy search's next step); nothing when there is no stack to measure."""
    try:
        step = int(step)
    except (TypeError, ValueError):
        raise AnsibleFilterError("fleetopt_stacked_variants: the step must be a whole number, not %r" % (step,))
    recommendation = recommendation if isinstance(recommendation, Mapping) else {}
    if boolean(verify, strict=False):
        if step != 1:
            return []
        if not isinstance(recommendation.get("verify_variant"), Mapping):
            raise AnsibleFilterError("fleetopt_stacked_variants: the recommendation to verify has no verify_variant "
                                     "(status: %s)" % recommendation.get("status", "none"))
        return [recommendation["verify_variant"]]
    stacked = recommendation.get("stacked_variant")
    if not isinstance(stacked, Mapping):
        return []
    if step == 1 or recommendation.get("outcome") == "searching":
        return [stacked]
    return []


def fleetopt_stack_skip(records):
    """The hosts, in the records' order, whose record says they did not finish their share of the matrix."""
    skip = []
    for record in records or []:
        if not isinstance(record, Mapping) or record.get("status") not in UNFINISHED:
            continue
        if not record.get("host"):
            raise AnsibleFilterError("fleetopt_stack_skip: a host record with status %s names no host" % record["status"])
        skip.append(record["host"])
    return skip


class FilterModule:
    def filters(self):
        return {"fleetopt_stacked_variants": fleetopt_stacked_variants, "fleetopt_stack_skip": fleetopt_stack_skip}
