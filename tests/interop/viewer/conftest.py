"""The viewer suite runs in the .peers/py312 environment: the `neuroglancer` package (its viewer
server and client), Playwright driving Debian's Chromium (installed by scripts/test), Pillow."""

import neuroglancer  # noqa: F401 - fail collection with a clear ImportError when missing
import playwright  # noqa: F401
