#!/usr/bin/env python3
"""CPULimitedHost: each host gets 20% of the machine (cfs bandwidth).

Run: sudo hymn python examples/python/cpulimit.py
runCpuLimitTest runs busy loops in both hosts and prints the share each
got; both must stay near 20% (under 35% with the machine's noise).
"""

import sys

from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.node import CPULimitedHost, LinuxBridge
from mininet.util import custom
from mininet.log import setLogLevel


def main():
    setLogLevel('info')
    host = custom(CPULimitedHost, cpu=0.2)
    net = Mininet(topo=SingleSwitchTopo(2), host=host, switch=LinuxBridge,
                  controller=None)
    net.start()
    shares = net.runCpuLimitTest(cpu=0.2, duration=3)
    net.stop()
    ok = all(0 < s < 35 for s in shares)  # a limit: at most 20%, plus noise
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
