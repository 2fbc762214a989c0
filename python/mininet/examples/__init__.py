"""mininet.examples: Mininet's own example scripts, where Debian's
mininet package installed them, run against hymn's API
(hymn python -m mininet.examples.NAME). HYMN_PY_EXAMPLES (directories
separated by ':') is searched first: the examples of a newer Mininet
checkout, for the tests written against them."""

import os

for _d in reversed([d for d in
                    os.environ.get('HYMN_PY_EXAMPLES', '').split(':') if d]):
    if os.path.isdir(_d) and _d not in __path__:
        __path__.insert(0, _d)

for _d in ('/usr/lib/python3/dist-packages/mininet/examples',
           '/usr/share/doc/mininet/examples'):
    if os.path.isdir(_d) and _d not in __path__:
        __path__.append(_d)
