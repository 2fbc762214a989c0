"""A server and its client started back to back with popen, again and
again: each client finds its server listening and reports a transfer."""

import os
import tempfile

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo
from mininet.log import setLogLevel

setLogLevel('info')
net = Mininet(topo=SingleSwitchTopo(3), controller=None, switch=LinuxBridge)
net.start()
h1, h2, h3 = net.hosts
out = tempfile.mkdtemp()
for i in range(4):
    port = 5201 + i
    server = h1.popen('iperf -s -p %d' % port)
    path = os.path.join(out, 'client%d.txt' % i)
    with open(path, 'w') as f:
        client = (h2, h3)[i % 2].popen(
            'iperf -c %s -p %d -t 1' % (h1.IP(), port), stdout=f,
            stderr=f)
        client.wait()
    server.terminate()
    server.wait()
net.stop()
for i in range(4):
    text = open(os.path.join(out, 'client%d.txt' % i)).read()
    assert 'bits/sec' in text and 'refused' not in text, (i, text)
print('OK')
