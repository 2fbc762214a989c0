"""A Mininet custom file with its own controller, as mn --custom takes it:

    hymn --custom examples/sdn-custom.py --topo twoswitch --switch ovsk --controller learning --test pingall
    mn   --custom examples/sdn-custom.py --topo twoswitch --switch ovsk --controller learning --test pingall

(--controller mine,port=6653 would use a controller the user runs.)
"""

from functools import partial

from mininet.node import OVSController, RemoteController
from mininet.topo import Topo


class TwoSwitch(Topo):
    "h1 and h2 on s1, h3 on s2."

    def build(self):
        s1, s2 = self.addSwitch('s1'), self.addSwitch('s2')
        for h, s in (('h1', s1), ('h2', s1), ('h3', s2)):
            self.addLink(self.addHost(h), s)
        self.addLink(s1, s2)


topos = {'twoswitch': TwoSwitch}
controllers = {
    'learning': OVSController,
    'mine': partial(RemoteController, ip='127.0.0.1', port=6633),
}
