#!/usr/bin/env python3
"""Open vSwitch switches and an OpenFlow controller: Mininet's defaults
(OVSKernelSwitch, Controller), a Controller subclass whose hooks run where
Mininet calls them, and the flows the controller installed.

Run: sudo hymn python examples/python/controller.py
"""

import sys

from mininet.net import Mininet
from mininet.node import Controller, OVSSwitch
from mininet.topolib import TreeTopo
from mininet.log import setLogLevel, info

CALLS = []


class MyController(Controller):
    def checkListening(self):
        CALLS.append('checkListening')

    def start(self):
        CALLS.append('start')
        Controller.start(self)


class MySwitch(OVSSwitch):
    def start(self, controllers):
        CALLS.append('switch %s: %s' % (self.name,
                                        [c.name for c in controllers]))
        return OVSSwitch.start(self, controllers)


def main():
    setLogLevel('info')
    net = Mininet(topo=TreeTopo(depth=2, fanout=2), switch=MySwitch,
                  controller=MyController)
    net.start()
    loss = net.pingAll()
    flows = net['s1'].dpctl('dump-flows')
    net.stop()
    print('\n'.join(CALLS))
    ok = (loss == 0 and CALLS[:2] == ['checkListening', 'start'] and
          'switch s1: [\'c0\']' in CALLS and 'actions=' in flows)
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
