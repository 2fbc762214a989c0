#!/usr/bin/env python3
"""NAT: hosts reach the machine's own network through nat0.

Run: sudo hymn python examples/python/nat.py
The hosts' default route goes through nat0, which masquerades their
traffic; h1 then reaches an address of the root namespace.
"""

import sys

from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.node import LinuxBridge
from mininet.util import quietRun
from mininet.log import setLogLevel


def main():
    setLogLevel('info')
    net = Mininet(topo=SingleSwitchTopo(2), switch=LinuxBridge,
                  controller=None)
    nat = net.addNAT()
    nat.configDefault()
    net.start()
    # An address of this machine outside the emulated network.
    target = quietRun("ip -4 -o addr show scope global | awk '{print $4}' "
                      "| cut -d/ -f1 | grep -v '^10\\.' | head -1",
                      shell=True).strip() or '127.0.0.1'
    route = net['h1'].cmd('ip route show default')
    out = net['h1'].cmd('ping -c2 -W2', target)
    net.stop()
    print('default route:', route.strip())
    ok = 'via %s' % nat.IP() in route and ' 0% packet loss' in out
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
