"""A host's share of the planned variants and the order of its launches (module_utils/fleetopt_launch_order.py),
which fleetopt_plan returns as `share` and `runs` and the campaign role loops over."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_launch_order import host_share, launch_order

VARIANTS = [{"id": i} for i in ("baseline", "a", "b", "c", "d", "e", "baseline_aa")]


def ids(variants):
    return [v["id"] for v in variants]


def test_one_host_measures_every_variant_baseline_first_and_the_aa_last():
    assert ids(host_share(VARIANTS, [], "localhost")) == ids(VARIANTS)
    assert ids(host_share(VARIANTS, ["localhost"], "localhost")) == ids(VARIANTS)


def test_host_k_of_n_sorted_by_name_takes_every_nth_optimization_and_measures_its_own_baseline_and_aa():
    fleet = ["gpu-b", "gpu-a"]
    assert ids(host_share(VARIANTS, fleet, "gpu-a")) == ["baseline", "a", "c", "e", "baseline_aa"]
    assert ids(host_share(VARIANTS, fleet, "gpu-b")) == ["baseline", "b", "d", "baseline_aa"]
    assert ids(host_share(VARIANTS, fleet, "gpu-b", spread=False)) == ids(VARIANTS)
    with pytest.raises(ValueError, match="gpu-c is not in the fleet gpu-a, gpu-b"):
        host_share(VARIANTS, fleet, "gpu-c")


def test_rounds_alternate_direction_and_later_launches_name_their_cells():
    share = host_share(VARIANTS[:3], [], "localhost")
    runs = launch_order(share, 3)
    assert [r["cell_name"] for r in runs] == [
        "baseline", "a", "b", "b.launch2", "a.launch2", "baseline.launch2", "baseline.launch3", "a.launch3", "b.launch3"]
    assert [r["launch_number"] for r in runs] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert {r["launches"] for r in runs} == {3}
    # Each run is a copy: the plan's variants keep no launch of their own.
    assert "launch_number" not in share[0]


def test_one_launch_keeps_catalog_order_and_plain_cell_names():
    assert [r["cell_name"] for r in launch_order(VARIANTS, 1)] == ids(VARIANTS)


def test_with_several_launches_the_aa_runs_next_to_the_baseline_and_keeps_the_mean_position():
    share = host_share([{"id": i} for i in ("baseline", "a", "b", "baseline_aa")], [], "localhost")
    runs = [r["cell_name"] for r in launch_order(share, 2)]
    assert runs == ["baseline", "baseline_aa", "a", "b",
                    "b.launch2", "a.launch2", "baseline_aa.launch2", "baseline.launch2"]
    positions = {}
    for position, run in enumerate(launch_order(share, 2)):
        positions.setdefault(run["id"], []).append(position)
    assert len({sum(p) for p in positions.values()}) == 1


def test_with_one_launch_the_aa_stays_last_and_spans_the_campaign():
    share = host_share([{"id": i} for i in ("baseline", "a", "b", "baseline_aa")], [], "localhost")
    assert [r["cell_name"] for r in launch_order(share, 1)] == ["baseline", "a", "b", "baseline_aa"]
