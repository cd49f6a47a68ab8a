"""Where the course's notebooks are: the core path in notebooks/, in order, and the deep dives in notebooks/deep_dives/.

Every script and test that walks the notebooks asks here, so that a deep dive is executed, compared, reset and
opened in the browser exactly like a core chapter.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_DIR = ROOT / "notebooks"
DEEP_DIVE_DIR = CORE_DIR / "deep_dives"


def core_notebooks() -> list[Path]:
    """The core path, in reading order (the file names start with the chapter number)."""
    return sorted(CORE_DIR.glob("*.ipynb"))


def deep_dives() -> list[Path]:
    """The deep dives, each named after the question it answers."""
    return sorted(DEEP_DIVE_DIR.glob("*.ipynb"))


def all_notebooks() -> list[Path]:
    """The core path, then the deep dives."""
    return core_notebooks() + deep_dives()
