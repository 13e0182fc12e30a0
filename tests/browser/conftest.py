"""Headless Chromium for the browser tests: what a reader's browser really shows of a report.

The `browser` marker selects (or with `-m "not browser"` leaves out) these tests. Chromium
missing is a failure, not a skip: tests/browser/ensure_chromium.sh installs it.
"""
import os
import shutil
import subprocess

import pytest

# Flags Chromium needs to run headless as root here without hanging on the closed network.
HEADLESS_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
)
RUN_TIMEOUT_S = 60


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: renders reports in headless Chromium (needs Debian's chromium)")


def chromium_binary():
    for candidate in (os.environ.get("FLEETOPT_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    """chromium(url, *flags) -> stdout; each run gets a fresh profile. A missing Chromium fails the test."""

    def run(url, *flags):
        binary = chromium_binary()
        if binary is None:
            pytest.fail("Chromium is not installed (looked for $FLEETOPT_CHROMIUM, /usr/bin/chromium, chromium on "
                        "PATH); run tests/browser/ensure_chromium.sh, which installs Debian's chromium",
                        pytrace=False)
        profile = tmp_path_factory.mktemp("chromium-profile")
        command = [binary, *HEADLESS_FLAGS, "--user-data-dir=%s" % profile, *flags, str(url)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        if done.returncode != 0:
            pytest.fail("chromium exited with %d: %s" % (done.returncode, done.stderr[-2000:]), pytrace=False)
        return done.stdout

    return run
