"""hymn's mininet package: Mininet's Python API, run by hymn.

Scripts written for Mininet 2.3 (from mininet.net import Mininet) run
unchanged under "hymn python SCRIPT": the objects here are proxies for a
network that lives in a hymn process this package starts and talks to
over a private socket. See docs/python.md in hymn's repository.
"""

VERSION = "2.3.0 (hymn)"
HYMN = True
