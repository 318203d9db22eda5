# SPDX-License-Identifier: MIT
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
