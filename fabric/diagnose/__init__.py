"""`fabric diagnose`: match job, kernel and benchmark logs against known RoCE failure signatures."""

from fabric.diagnose.engine import DEFAULT_TOS, Finding, Report, Signature, diagnose, load_catalog

__all__ = ["DEFAULT_TOS", "Finding", "Report", "Signature", "diagnose", "load_catalog"]
