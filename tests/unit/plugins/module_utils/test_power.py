"""fleetopt_power: board power sampled with nvidia-smi during a benchmark, on a stand-in nvidia-smi
(tests/fake_nvidia_smi.py) that answers in the real format, and a driver that refuses
power.draw.instant. tests/device/gpu_power_check.py runs the sampler on a real GPU."""
import time

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_power import (
    PowerSampler, parse_power_line, power_field, window_power)


def test_lines_in_nvidia_smi_format_are_read_and_anything_else_is_not():
    assert parse_power_line("0, 712.34\n") == (0, 712.34)
    assert parse_power_line("3, 79.72") == (3, 79.72)
    assert parse_power_line("0, [N/A]") is None
    assert parse_power_line('Field "power.draw.instant" is not a valid field to query.') is None
    assert parse_power_line("") is None


def test_a_window_takes_the_samples_inside_it_per_gpu_and_sums_the_gpus():
    samples = [(t, 0, 700.0 if 10 <= t <= 20 else 80.0) for t in range(0, 30)]
    samples += [(t, 1, 500.0 if 10 <= t <= 20 else 80.0) for t in range(0, 30)]
    found = window_power(samples, 10, 20)
    assert found["status"] == "ok" and found["gpu_mean_w"] == {"0": 700.0, "1": 500.0}
    assert found["board_power_w"] == 1200.0 and found["energy_j"] == 12000.0 and found["samples"] == 22


def test_a_window_with_too_few_samples_says_so_rather_than_guessing():
    found = window_power([(1.0, 0, 700.0), (1.2, 0, 710.0)], 0.9, 1.3)
    assert found["status"] == "too_few_samples" and "fewer than 3" in found["reason"]
    assert "board_power_w" not in found


def test_the_sampler_reads_every_gpu_until_stopped(fake_nvidia_smi):
    sampler = PowerSampler(fake_nvidia_smi, interval_ms=20)
    assert sampler.start() and sampler.field == "power.draw.instant"
    began = time.time()
    time.sleep(0.5)
    ended = time.time()
    sampler.stop()
    found = sampler.window(began, ended)
    assert found["status"] == "ok" and found["gpu_mean_w"] == {"0": 300.0, "1": 100.0} and found["board_power_w"] == 400.0
    assert sampler.description() == {"sampled": True, "tool": fake_nvidia_smi, "field": "power.draw.instant",
                                     "interval_ms": 20, "gpus": [0, 1]}
    assert sampler.proc.poll() is not None, "nvidia-smi is not left running"


def test_a_driver_without_instant_readings_is_sampled_with_power_draw(fake_nvidia_smi, monkeypatch):
    monkeypatch.setenv("FLEETOPT_FAKE_NO_INSTANT", "1")
    assert power_field(fake_nvidia_smi) == ("power.draw", None)


def test_no_nvidia_smi_is_no_sampling_with_the_reason(tmp_path):
    sampler = PowerSampler(str(tmp_path / "absent"))
    assert sampler.start() is False and sampler.window(0, 1) is None
    described = sampler.description()
    assert described["sampled"] is False and "No such file" in described["reason"]
    sampler.stop()
