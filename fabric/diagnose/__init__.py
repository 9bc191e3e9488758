"""`fabric diagnose`: match job, kernel and benchmark logs against known RoCE failure signatures.

catalog  the Signature model and catalog.yaml (package data), extended by --catalog
logs     reading log files (gzip, stdin), kind markers, the host that logged a line
match    every line against the catalog and the cross-line rules → one finding per signature and file
rules    the cross-line rules DG9xx (traffic class, NCCL_IB_HCA, CNPs, link flaps)
report   Finding, LogFile, Report, and binding findings to an inventory
bind     where in the fabric a finding's subjects are
"""

from fabric.diagnose.catalog import Signature, load_catalog
from fabric.diagnose.match import diagnose
from fabric.diagnose.report import Finding, Report
from fabric.diagnose.rules import DEFAULT_TOS

__all__ = ["DEFAULT_TOS", "Finding", "Report", "Signature", "diagnose", "load_catalog"]
