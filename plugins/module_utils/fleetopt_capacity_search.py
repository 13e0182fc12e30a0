# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity search of a benchmark: which levels it measures after the planned ones, and its record.

Its options (capacity_search_levels, capacity_max_concurrency, slo) are declared by the module
fleetopt_bench; the search itself runs in that module's action plugin on the controller, which
measures each level this class names with one module call. Which level comes next, and whether a
level holds, is fleetopt_slo's rule (the report reads capacity with the same rule).
Standard library only.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_slo import level_holds, next_search_level

# capacity_max_concurrency's default, also where the option is given as 0 or not at all.
DEFAULT_CEILING = 256


class CapacitySearch:
    """Up to `budget` levels after the planned ones: while every level holds, double the top one (up to
    `ceiling`); once one fails, bisect the gap below it. A search runs only with a budget and an SLO."""

    def __init__(self, budget, slo, ceiling=None):
        self.budget = int(budget or 0)
        self.slo = dict((key, limit) for key, limit in (slo or {}).items() if limit is not None)
        self.ceiling = int(ceiling or DEFAULT_CEILING)
        self.searched = []
        self.stopped_by = "budget"

    @classmethod
    def from_args(cls, args):
        """The search a fleetopt_bench task's arguments ask for."""
        return cls(args.get("capacity_search_levels"), args.get("slo"), args.get("capacity_max_concurrency"))

    @property
    def enabled(self):
        return self.budget > 0 and bool(self.slo)

    def next_level(self, levels, ended=False):
        """The next concurrency to measure, given every run so far ([{concurrency, status, metrics}], planned and
        searched), or None when the search stops; `ended` is whether a run ended the benchmark.
        The level returned counts as searched."""
        if ended:
            self.stopped_by = "ended"
            return None
        by_level = {}
        for level in levels:
            by_level.setdefault(int(level["concurrency"]), []).append(level)
        ladder = [(concurrency, level_holds(runs, self.slo)) for concurrency, runs in by_level.items()]
        concurrency = next_search_level(ladder, self.ceiling)
        if concurrency is None:
            self.stopped_by = "ceiling" if all(holds for _level, holds in ladder) else "found"
            return None
        if len(self.searched) >= self.budget:
            self.stopped_by = "budget"
            return None
        self.searched.append(concurrency)
        return concurrency

    def record(self):
        """What the search did: the levels it measured in order, its budget and ceiling, and what stopped it
        (found, budget, ceiling, ended); the module's RV(capacity_search)."""
        return {"levels": list(self.searched), "budget": self.budget, "ceiling": self.ceiling,
                "stopped_by": self.stopped_by}
