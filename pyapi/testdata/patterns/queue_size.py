"""A computed queue size: TCLink(max_queue_size=bdp/1500) is a float;
Mininet writes it into the qdisc as a whole number of packets."""

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.link import TCLink
from mininet.topo import Topo
from mininet.log import setLogLevel


class Dumbbell(Topo):
    def build(self, bw=10, delay='10ms'):
        bdp = bw * 1e6 / 8 * 2 * 0.010  # bytes in flight on the path
        s1 = self.addSwitch('s1')
        for h in ('h1', 'h2'):
            self.addLink(self.addHost(h), s1, cls=TCLink, bw=bw,
                         delay=delay, max_queue_size=bdp / 1500)


setLogLevel('info')
net = Mininet(topo=Dumbbell(), controller=None, switch=LinuxBridge)
net.start()
loss = net.ping([net['h1'], net['h2']])
# tc shows the queue netem has: 16 packets (bdp / 1500 = 16.67).
shown = net['h1'].cmd('tc qdisc show dev h1-eth0')
net.stop()
assert loss == 0, loss
assert 'limit 16 ' in shown, shown
print('OK')
