# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of a run that a benchmark skipped because an earlier run ended it.

A run whose server died, or that timed out, ends the benchmark: fleetopt_bench skips the runs left
in its call, and its action plugin the levels it had not called the module for yet. Both write
this record, so a skipped run reads the same wherever it was skipped. Standard library only.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def end_reason(server_died):
    """Why the runs after the one that ended the benchmark were skipped (a dead server, else a time-out)."""
    return "the server had exited" if server_died else "an earlier run timed out"


def skipped_run(concurrency, trial, server_died):
    """One skipped run's entry of the benchmark's levels."""
    return {"concurrency": concurrency, "trial": trial, "status": "skipped", "metrics": None,
            "reason": end_reason(server_died)}
