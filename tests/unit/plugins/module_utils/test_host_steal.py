"""The CPU time a host's hypervisor gave other guests while a benchmark run lasted (steal), read by
the kept benchmark client (fleetopt_bench_client) from the host's /proc/stat."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_bench_client import host_cpu_ticks, steal_share

# cpu user nice system idle iowait irq softirq steal guest guest_nice (clock ticks), as Linux writes it.
BEFORE = "cpu  29553 0 7043 104311 694 0 196 2615 0 0\ncpu0 14000 0 3500 52000 300 0 100 1300 0 0\n"
AFTER = "cpu  29708 0 7146 104808 767 0 275 2729 0 0\ncpu0 14077 0 3550 52250 330 0 140 1357 0 0\n"


def stat_file(tmp_path, text, name="stat"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_steal_is_the_share_of_all_the_hosts_cpu_time_between_two_readings(tmp_path):
    before, after = host_cpu_ticks(stat_file(tmp_path, BEFORE, "a")), host_cpu_ticks(stat_file(tmp_path, AFTER, "b"))
    assert before == (2615, 29553 + 7043 + 104311 + 694 + 196 + 2615)
    # 114 ticks stolen of 155 + 103 + 497 + 73 + 79 + 114 = 1021 (user, system, idle, iowait, softirq, steal).
    assert steal_share(before, after) == pytest.approx(114 / 1021, abs=1e-4)


@pytest.mark.parametrize("text", ["", "cpu  1 2 3 4\n", "intr 1 2 3 4 5 6 7 8 9\n", "cpu  a b c d e f g h\n"])
def test_a_kernel_that_does_not_say_gives_no_share(tmp_path, text):
    assert host_cpu_ticks(stat_file(tmp_path, text)) is None
    assert steal_share(None, (1, 2)) is None


def test_no_file_and_no_time_passed_give_no_share(tmp_path):
    assert host_cpu_ticks(str(tmp_path / "absent")) is None
    assert steal_share((5, 100), (5, 100)) is None


def test_this_hosts_own_reading_is_a_share_between_0_and_1():
    reading = host_cpu_ticks()
    if reading is None:
        pytest.skip("this kernel gives no steal column")
    share = steal_share((0, 0), reading)
    assert 0 <= share <= 1
