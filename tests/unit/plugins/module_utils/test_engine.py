import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import (
    REDACTED, config_hash, merge_flags, redact_argv, redact_env, render_flags,
)


def test_merge_flags_later_layers_override_and_null_removes():
    merged = merge_flags({"--enforce-eager": True, "--max-model-len": 1024}, {"--enforce-eager": None, "--dtype": "float32"})
    assert merged == {"--max-model-len": 1024, "--dtype": "float32"}


def test_render_flags_switches_values_lists_and_dicts():
    argv = render_flags({"--a": True, "--b": 4, "--c": [1, 2], "--d": {"x": 1}})
    assert argv == ["--a", "--b", "4", "--c", "1", "2", "--d", '{"x": 1}']


def test_render_flags_refuses_a_name_without_dash():
    with pytest.raises(ValueError):
        render_flags({"enforce-eager": True})


def test_redaction_hides_secret_values_and_values_after_secret_flags_only():
    argv = ["serve", "--tokenizer", "/m", "--api-key", "s3cret", "--hf-token", "abc", "--x=s3cret-in-it"]
    assert redact_argv(argv, ["s3cret"]) == ["serve", "--tokenizer", "/m", "--api-key", REDACTED, "--hf-token", REDACTED, REDACTED]
    env = redact_env({"HF_TOKEN": "t", "PROXMOX_TOKEN_SECRET": "p", "TOKENIZERS_PARALLELISM": "false"})
    assert env == {"HF_TOKEN": REDACTED, "PROXMOX_TOKEN_SECRET": REDACTED, "TOKENIZERS_PARALLELISM": "false"}


def test_config_hash_depends_on_argv_and_env_but_not_env_order():
    a = config_hash(["x", "--a"], {"A": "1", "B": "2"})
    assert a == config_hash(["x", "--a"], {"B": "2", "A": "1"})
    assert a != config_hash(["x", "--b"], {"A": "1", "B": "2"})
    assert a != config_hash(["x", "--a"], {"A": "1", "B": "3"})
