#!/usr/bin/env python3
"""CIMininet's seven-node line (spec section 6), in its four variants.

Run: sudo hymn python examples/python/cimininet_line.py NODES LINKS
with NODES namespace|vm and LINKS veth|hwpair. As CIMininet's
mininet_experiment.py, the mode picks the classes (Host or VMHost,
LinuxBridge or VMLinuxBridge, Link or HwPair) and nothing else changes:
seven hosts in a line, each link's ends alternating (node1/node2 swap
every link), IP forwarding and static routes on every host, and, after
net.start(), an existing interface handed to h1 and one to h7 with
Intf(name, node=h, ip=...) as CIMininet hands them its load generator's
VFs. Here the "load generator" is two namespaces of this script's own;
a ping from one to the other crosses all seven hosts (TTL 64 - 7).
HwPair.available_pairs is left empty, so HwPair links are VF pairs of
hymn's SR-IOV inventory (the simulated NIC on a machine without one).
"""

import os
import re
import subprocess
import sys
import time

from mininet.net import Mininet
from mininet.topo import Topo
from mininet.link import Intf, Link, HwPair
from mininet.node import VMHost, Host
from mininet.nodelib import LinuxBridge, VMLinuxBridge
from mininet.log import setLogLevel, info

N = 7


class LineTopo(Topo):
    def build(self, vm=False):
        hosts = []
        for i in range(N):
            # VM parameters; a plain Host ignores them, as in Mininet.
            hosts.append(self.addHost('h%d' % (i + 1), ip=None, cpus=1,
                                      memory='256M',
                                      cmdline='net.ifnames=0'))
        for i in range(N - 1):
            a, b = hosts[i], hosts[i + 1]
            pa = {'ip': '10.3.%d.1/24' % i}
            pb = {'ip': '10.3.%d.2/24' % i}
            if i % 2:  # alternate the ends, to use both PFs of a cable
                self.addLink(b, a, params1=pb, params2=pa)
            else:
                self.addLink(a, b, params1=pa, params2=pb)


def sh(*cmd):
    subprocess.run(cmd, check=True)


def main(nodes, links):
    setLogLevel('info')
    vm = nodes == 'vm'
    HwPair.available_pairs = []
    net = Mininet(LineTopo(vm=vm), host=VMHost if vm else Host,
                  switch=VMLinuxBridge if vm else LinuxBridge,
                  link=HwPair if links == 'hwpair' else Link,
                  controller=None)
    tag = str(os.getpid())
    lga, lgb = 'lgA' + tag, 'lgB' + tag
    ends = ('tg1-' + tag)[:15], ('tg7-' + tag)[:15]
    t0 = time.time()
    try:
        net.start()
        hs = [net['h%d' % (i + 1)] for i in range(N)]
        for i, h in enumerate(hs):
            h.cmd('sysctl -w net.ipv4.ip_forward=1')
            if i < N - 1:  # toward h7's side
                nxt = '10.3.%d.%d' % (i, 2)
                h.cmd('ip route add 10.0.2.0/24 via', nxt)
            if i > 0:  # back toward h1's side
                prv = '10.3.%d.%d' % (i - 1, 1)
                h.cmd('ip route add 10.0.0.0/24 via', prv)
        # The load generator's two sides, and their wires into h1 and h7.
        for ns, end, peer, ip, gw, far in (
                (lga, ends[0], 'lgA', '10.0.0.20/24', '10.0.0.101',
                 '10.0.2.0/24'),
                (lgb, ends[1], 'lgB', '10.0.2.20/24', '10.0.2.101',
                 '10.0.0.0/24')):
            sh('ip', 'netns', 'add', ns)
            sh('ip', 'link', 'add', end, 'type', 'veth', 'peer', 'name',
               peer, 'netns', ns)
            sh('ip', '-n', ns, 'addr', 'add', ip, 'dev', peer)
            sh('ip', '-n', ns, 'link', 'set', peer, 'up')
            sh('ip', '-n', ns, 'route', 'add', far, 'via', gw)
        Intf(ends[0], node=hs[0], ip='10.0.0.101/24')
        Intf(ends[1], node=hs[-1], ip='10.0.2.101/24')
        out = subprocess.run(['ip', 'netns', 'exec', lga, 'ping', '-c3',
                              '-W3', '10.0.2.20'], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        print(out)
        ttl = re.findall(r'ttl=(\d+)', out)
        ok = ' 0% packet loss' in out and ttl and int(ttl[0]) == 64 - N
    finally:
        net.stop()
        for ns in (lga, lgb):
            subprocess.run(['ip', 'netns', 'del', ns],
                           stderr=subprocess.DEVNULL)
    print('variant %s/%s: %.1f s, traffic through %d hosts: %s'
          % (nodes, links, time.time() - t0, N, 'OK' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] not in ('namespace', 'vm') or \
            sys.argv[2] not in ('veth', 'hwpair'):
        sys.exit('usage: cimininet_line.py namespace|vm veth|hwpair')
    sys.exit(main(sys.argv[1], sys.argv[2]))
