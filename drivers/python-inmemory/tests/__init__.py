"""Unit tests of the Python driver: python3 -m unittest discover -s tests -t .

Run from drivers/python-inmemory; the Go test TestPythonUnitTests does so in
`make test`.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(_ROOT, "gen"), _ROOT]
