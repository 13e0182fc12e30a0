"""Stand-in for pip's get-pip.py, which ansible-test downloads from ci-files.testing.ansible.com
to put pip into the virtual environments it makes; where only the package index can be reached,
scripts/ansible_test.sh puts this in its cache instead. Python's own ensurepip installs a pip,
which then installs the pinned pip and packages ansible-test asks for.

ensurepip runs in a process of its own: in-process it sets PIP_CONFIG_FILE=/dev/null, which the
pip after it would inherit (losing the machine's index and certificate settings)."""
import subprocess
import sys

if subprocess.call([sys.executable, "-m", "ensurepip"]) != 0:
    sys.exit(1)
options = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + options))
