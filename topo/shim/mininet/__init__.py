"""hymn's stand-in for the mininet package.

hymn runs Mininet custom topology files (mn --custom) with python3 against
this small package instead of the real one: the classes record what a
topology's build() adds, and hymn builds the network itself. Modules and
names that only matter when Mininet runs a network exist so that imports
succeed; using them outside a topology's build() raises a clear error.
"""

VERSION = "2.3.0 (hymn stand-in)"
