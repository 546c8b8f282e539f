"""Where the repository and the test data are, for a test at any depth of the tree."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
