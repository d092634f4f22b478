"""Content Platform API."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("contentplatform")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

API_VERSION = "0.2.0"
