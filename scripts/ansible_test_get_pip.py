"""Stand-in for the get-pip.py that ansible-test downloads from a host this network cannot reach.

ansible-test runs this file in a fresh venv with pip's install arguments (pinned pip and friends).
The interpreter's own ensurepip provides a pip, which then installs the pinned versions from PyPI.
"""

import subprocess
import sys

GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, "-m", "pip", "install", *[a for a in sys.argv[1:] if a not in GET_PIP_ONLY_FLAGS]])
