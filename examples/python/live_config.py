#!/usr/bin/env python3
"""Changing a running link: intf.config(delay=..., loss=...) as Mininet's
TCIntf takes it, one interface (one direction) at a time, measured by
ping after each change.

Run: sudo hymn python examples/python/live_config.py
"""

import re
import sys

from mininet.net import Mininet
from mininet.node import LinuxBridge
from mininet.link import TCLink
from mininet.log import setLogLevel


def rtt(h, ip):
    "The smallest of 5 RTTs: a delay is a floor; a busy machine adds."
    out = h.cmd('ping -c5 -i0.2', ip)
    return float(re.search(r'= ([\d.]+)/', out).group(1))


def main():
    setLogLevel('info')
    net = Mininet(link=TCLink, switch=LinuxBridge, controller=None)
    h1, h2 = net.addHost('h1'), net.addHost('h2')
    s1 = net.addSwitch('s1')
    link = net.addLink(h1, s1, delay='5ms')
    net.addLink(h2, s1)
    net.start()
    base = rtt(h1, h2.IP())               # 5 ms out + 5 ms back
    link.intf1.config(delay='50ms')       # h1's egress only
    one = rtt(h1, h2.IP())                # 50 + 5
    link.intf2.config(delay='30ms')       # s1's egress toward h1
    two = rtt(h1, h2.IP())                # 50 + 30
    net.stop()
    print('\nrtt: %.1f ms, then %.1f ms, then %.1f ms' % (base, one, two))
    ok = 9.5 < base < 50 and 54.5 < one < 100 and 79.5 < two < 130
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
