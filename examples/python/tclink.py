#!/usr/bin/env python3
"""A TCLink experiment: two hosts behind a 10 Mbit/s, 15 ms link.

Run: sudo hymn python examples/python/tclink.py
Prints the RTT ping measures (>= 60 ms: 15 ms on each of the four
interface egresses of h1-s1-h2) and iperf's rate (about 10 Mbit/s).
"""

import re
import sys

from mininet.net import Mininet
from mininet.topo import Topo
from mininet.link import TCLink
from mininet.node import LinuxBridge
from mininet.log import setLogLevel, info


class TwoHosts(Topo):
    def build(self):
        s1 = self.addSwitch('s1')
        self.addLink(self.addHost('h1'), s1, bw=10, delay='15ms')
        self.addLink(self.addHost('h2'), s1, bw=10, delay='15ms')


def main():
    setLogLevel('info')
    net = Mininet(topo=TwoHosts(), link=TCLink, switch=LinuxBridge,
                  controller=None)
    net.start()
    h1, h2 = net['h1'], net['h2']
    out = h1.cmd('ping -c4 -i0.3', h2.IP())
    avg = float(re.search(r'= [\d.]+/([\d.]+)/', out).group(1))
    server, client = net.iperf([h1, h2], seconds=3)
    rate = float(server.split()[0]) * {'K': 1e-3, 'M': 1, 'G': 1e3}.get(
        server.split()[1][0], 1e-6)
    net.stop()
    print('rtt_avg_ms=%.1f server_mbps=%.2f' % (avg, rate))
    ok = avg >= 59 and 5 < rate <= 10.5
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
