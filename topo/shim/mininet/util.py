"Helpers of mininet.util that topology files use; process helpers are stubs."

import os
import re
from functools import partial

from mininet._stub import module_getattr, unsupported


def irange(start, end):
    "Inclusive range, as Mininet's irange."
    return range(start, end + 1)


def natural(text):
    "Sort key that orders runs of digits as numbers (h2 before h10)."
    def num(s):
        return int(s) if s.isdigit() else s
    return [num(s) for s in re.split(r'(\d+)', str(text))]


def naturalSeq(t):
    "Natural sort key for a sequence."
    return [natural(x) for x in t]


def checkInt(s):
    try:
        int(s)
        return True
    except ValueError:
        return False


def checkFloat(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def makeNumeric(s):
    "int if it reads as one, else float, else the string (mn's rule)."
    if checkInt(s):
        return int(s)
    if checkFloat(s):
        return float(s)
    return s


def splitArgs(argstr):
    "Split 'name,a,b,k=v' into name, positional args and keyword args."
    split = argstr.split(',')
    fn = split[0]
    params = split[1:]
    args = [makeNumeric(s) for s in params if '=' not in s]
    kwargs = {}
    for s in [p for p in params if '=' in p]:
        key, val = s.split('=', 1)
        kwargs[key] = makeNumeric(val)
    return fn, args, kwargs


def customClass(classes, argStr):
    "Look up a class by spec string and bind its arguments."
    cname, args, kwargs = splitArgs(argStr)
    cls = classes.get(cname, None)
    if not cls:
        raise Exception("error: %s is unknown - please specify one of %s" %
                        (cname, classes.keys()))
    if not args and not kwargs:
        return cls
    return specialClass(cls, append=args, defaults=kwargs)


def specialClass(cls, prepend=None, append=None, defaults=None,
                 override=None):
    "A subclass of cls with extra arguments, as Mininet's specialClass."
    prepend = prepend or []
    append = append or []
    defaults = defaults or {}
    override = override or {}

    class CustomClass(cls):
        def __init__(self, *args, **params):
            merged = dict(defaults)
            merged.update(params)
            merged.update(override)
            cls.__init__(self, *(list(prepend) + list(args) + list(append)),
                         **merged)
    CustomClass.__name__ = '%s%s' % (cls.__name__, defaults)
    return CustomClass


def custom(cls, **params):
    "cls with default parameters, as Mininet's custom()."
    def customized(*args, **kwargs):
        merged = dict(params)
        merged.update(kwargs)
        return cls(*args, **merged)
    customized.__name__ = 'custom(%s,%s)' % (cls, params)
    customized.hymn_class = cls
    customized.hymn_params = params
    return customized


def buildTopo(topos, topoStr):
    "Build a topology from a spec string."
    topo, args, kwargs = splitArgs(topoStr)
    if topo not in topos:
        raise Exception('Invalid topo name %s' % topo)
    return topos[topo](*args, **kwargs)


def ipNum(w, x, y, z):
    return (w << 24) | (x << 16) | (y << 8) | z


def ipStr(ip):
    return '%i.%i.%i.%i' % (ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
                           ip & 0xff)


def ipAdd(i, prefixLen=8, ipBaseNum=0x0a000000):
    "Address number i in the base network (no prefix length appended)."
    imax = 0xffffffff >> prefixLen
    assert i <= imax, 'Not enough IP addresses in the subnet'
    mask = 0xffffffff ^ imax
    return ipStr((ipBaseNum & mask) + i)


def ipParse(ip):
    args = [int(arg) for arg in ip.split('.')]
    while len(args) < 4:
        args.insert(len(args) - 1, 0)
    return ipNum(*args)


def netParse(ipstr):
    prefixLen = 0
    if '/' in ipstr:
        ip, pf = ipstr.split('/')
        prefixLen = int(pf)
    else:
        ip = ipstr
    return ipParse(ip), prefixLen


def macColonHex(mac):
    return ':'.join('%02x' % ((mac >> s) & 0xff) for s in range(40, -8, -8))


def numCores():
    return os.cpu_count() or 1


def dumpNodeConnections(*_args, **_kwargs):
    "Nothing to dump: no network runs while hymn reads the file."


dumpNetConnections = dumpPorts = dumpNodeConnections


def quietRun(*_args, **_kwargs):
    "Commands are not run while hymn reads a topology file."
    return ''


def errRun(*_args, **_kwargs):
    return '', '', 0


def fixLimits():
    pass


def ensureRoot():
    pass


def decode(s):
    return s.decode() if isinstance(s, bytes) else s


def encode(s):
    return s.encode() if isinstance(s, str) else s


waitListening = unsupported('mininet.util.waitListening')
pmonitor = unsupported('mininet.util.pmonitor')
moveIntf = unsupported('mininet.util.moveIntf')
run = unsupported('mininet.util.run')
errFail = unsupported('mininet.util.errFail')

__getattr__ = module_getattr(__name__, object)
__all__ = ['irange', 'natural', 'naturalSeq', 'makeNumeric', 'splitArgs',
           'customClass', 'specialClass', 'custom', 'buildTopo', 'ipAdd',
           'ipStr', 'ipNum', 'ipParse', 'netParse', 'quietRun',
           'dumpNodeConnections', 'partial']
