"""mininet.moduledeps for hymn: hymn needs no kernel modules loaded by
the script."""

import shutil


def lsmod():
    return ''


def rmmod(mod):
    return ''


def modprobe(mod):
    return ''


def moduleDeps(subtract=None, add=None):
    pass


def pathCheck(*args, **kwargs):
    "Exit (as Mininet does) when a program is not on PATH."
    moduleName = kwargs.get('moduleName', 'it')
    for arg in args:
        if not shutil.which(arg):
            raise SystemExit('Cannot find required executable %s.\nPlease '
                             'make sure that %s is installed and available '
                             'in your $PATH:\n(%s)' % (arg, moduleName,
                                                       ''))
