"""mininet.examples: Mininet's own example scripts, where Debian's
mininet package installed them, run against hymn's API
(hymn python -m mininet.examples.NAME)."""

import os

for _d in ('/usr/lib/python3/dist-packages/mininet/examples',
           '/usr/share/doc/mininet/examples'):
    if os.path.isdir(_d) and _d not in __path__:
        __path__.append(_d)
