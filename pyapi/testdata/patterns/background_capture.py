"""A background capture in a host: h2.cmd('tcpdump -w ./FILE &'). The
file is written in the directory the script was in when it made the
network, and is complete when net.stop() returns: the hangup that
stops the shell makes tcpdump flush it."""

import os
import tempfile
import time

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo
from mininet.log import setLogLevel

setLogLevel('info')
here = tempfile.mkdtemp()
os.chdir(here)
net = Mininet(topo=SingleSwitchTopo(2), controller=None, switch=LinuxBridge)
net.start()
h1, h2 = net.hosts
os.chdir('/')  # the nodes' shells were made in here (Mininet's rule)
h2.cmd('tcpdump -n -i h2-eth0 -w ./h2_output.pcap &')
started = os.path.join(here, 'h2_output.pcap')
deadline = time.time() + 10
while not os.path.exists(started) and time.time() < deadline:
    time.sleep(0.05)
assert os.path.exists(started), 'tcpdump did not start in ' + here
h1.cmd('ping -c 3 -i 0.2 %s' % h2.IP())
# tcpdump reads what it captured in blocks the kernel hands over at
# least once a second; on a hangup it writes what it has read.
time.sleep(1.5)
# A second capture stopped at once, before it has even started: net.stop
# lets it start (Mininet's quick hangup can kill it before it makes its
# file).
h1.cmd('tcpdump -n -i h1-eth0 -w ./h1_output.pcap &')
net.stop()
size = os.path.getsize(started)
# The pcap header is 24 bytes; six ICMP packets of 98 bytes follow.
assert size > 24 + 6 * 98, size
assert os.path.exists(os.path.join(here, 'h1_output.pcap')), os.listdir(here)
print('OK')
