"""What scripts read of switches and controllers as Mininet shows them:
a switch outside a namespace lists lo as its port 0; ovs-vsctl
get-controller answers tcp:IP:PORT for the controllers hymn runs, also
for a switch started with one of them; mininet.util.pexpect is there."""

from mininet.net import Mininet
from mininet.node import OVSSwitch, OVSController
from mininet.util import quietRun

net = Mininet(switch=OVSSwitch, controller=None, build=False)
c1 = net.addController('c1', controller=OVSController, port=6653 + 30)
c2 = net.addController('c2', controller=OVSController, port=6653 + 31)
s1, s2 = net.addSwitch('s1'), net.addSwitch('s2')
h1, h2 = net.addHost('h1'), net.addHost('h2')
for a, b in ((h1, s1), (h2, s2), (s1, s2)):
    net.addLink(a, b)
assert s1.intfNames() == ['lo', 's1-eth1', 's1-eth2'], s1.intfNames()
assert str(s1.defaultIntf()) == 'lo'
net.build()
c1.start()
c2.start()
s1.start([c1])
s2.start([c2])
got = [quietRun('ovs-vsctl get-controller %s' % s).strip()
       for s in ('s1', 's2')]
assert got == ['tcp:127.0.0.1:6683', 'tcp:127.0.0.1:6684'], got
shown = s1.cmd('ovs-vsctl show')
assert 'tcp:127.0.0.1:6683' in shown and 'unix:' not in shown, shown
net.waitConnected()
loss = net.pingAll()
net.stop()
assert loss == 0, loss
try:
    import pexpect  # noqa: F401
    from mininet.util import pexpect as mnpexpect
    p = mnpexpect.spawn('echo hello')
    p.expect('hello')
    assert isinstance(p.after, str)
except ImportError:
    pass
print('OK')
