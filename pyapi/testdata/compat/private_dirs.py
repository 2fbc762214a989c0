"""Private directories (Host(privateDirs=...)): each host sees its own
copy of a directory, bound from a per-host source or an empty tmpfs; the
machine and the other hosts do not see it; popen runs where the shell
does."""

import os
from functools import partial

from mininet.net import Mininet
from mininet.node import Host
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo

marker = '/var/log/hymn-private-%d.txt' % os.getpid()
dirs = [('/var/log', '/tmp/hymn-pd-%d/%%(name)s/log' % os.getpid()),
        '/var/mn']
net = Mininet(topo=SingleSwitchTopo(2), controller=None, switch=LinuxBridge,
              host=partial(Host, privateDirs=dirs))
net.start()
h1, h2 = net.hosts
h1.cmd('echo one > %s; touch /var/mn/x' % marker)
assert h1.cmd('cat %s' % marker).strip() == 'one'
assert 'No such file' in h2.cmd('cat %s' % marker)
assert h2.cmd('ls /var/mn').strip() == ''
assert not os.path.exists(marker), 'the machine sees the private file'
out = h1.popen(['cat', marker]).communicate()[0].decode()
assert out.strip() == 'one', out
assert os.path.exists('/tmp/hymn-pd-%d/h1/log/%s'
                      % (os.getpid(), os.path.basename(marker)))
net.stop()
os.system('rm -rf /tmp/hymn-pd-%d' % os.getpid())
print('OK')
