"""mininet.clean for hymn: cleanup() is hymn clean (what hymn runs that
no live program owns)."""

import subprocess

from mininet.log import info
from mininet import _hymn


def cleanup():
    "Remove what dead hymn networks left, as mn -c does for Mininet."
    info("*** Removing excess hymn networks\n")
    subprocess.call([_hymn.hymnBinary(), 'clean'])
    info("*** Cleanup complete.\n")


def killprocs(pattern):
    raise NotImplementedError('mininet.clean.killprocs: hymn removes the '
                              'processes of its networks itself; use '
                              'cleanup()')


def sh(cmd):
    return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout


class Cleanup(object):
    "Mininet's Cleanup class."
    callbacks = []

    @classmethod
    def cleanup(cls):
        for cb in cls.callbacks:
            cb()
        cleanup()

    @classmethod
    def addCleanupCallback(cls, callback):
        cls.callbacks.append(callback)


addCleanupCallback = Cleanup.addCleanupCallback
