"Logging functions of mininet.log, writing to stderr as Mininet does."

import logging
import sys

OUTPUT = 25  # Mininet's level between info and warning
LOGMSGFORMAT = '%(message)s'
LEVELS = {'debug': logging.DEBUG, 'info': logging.INFO,
          'output': OUTPUT,
          'warning': logging.WARNING, 'warn': logging.WARNING,
          'error': logging.ERROR, 'critical': logging.CRITICAL}
LOGLEVELDEFAULT = 'output'
_level = [LEVELS[LOGLEVELDEFAULT]]


def setLogLevel(levelname=None):
    "Set the level below which messages are dropped."
    _level[0] = LEVELS.get(levelname or LOGLEVELDEFAULT, logging.INFO)


def _writer(level):
    def write(*args, **_kwargs):
        if level >= _level[0]:
            sys.stderr.write(args[0] if len(args) == 1 and isinstance(args[0], str)
                             else ' '.join(str(a) for a in args))
            sys.stderr.flush()
    return write


debug = _writer(logging.DEBUG)
info = _writer(logging.INFO)
output = _writer(OUTPUT)
warn = warning = _writer(logging.WARNING)
error = _writer(logging.ERROR)
critical = _writer(logging.CRITICAL)


class MininetLogger(object):
    "The lg object: the same functions as methods."
    debug = staticmethod(debug)
    info = staticmethod(info)
    output = staticmethod(output)
    warn = warning = staticmethod(warn)
    error = staticmethod(error)
    critical = staticmethod(critical)
    setLogLevel = staticmethod(setLogLevel)

    def isEnabledFor(self, level):
        return level >= _level[0]


lg = MininetLogger()
