"""CPULimitedHost(sched='rt'): where the kernel has RT group scheduling
(cgroup v1's cpu.rt_runtime_us), the host's group gets cpu=f of each
CPU's time for its real-time tasks (rt_runtime_us = f * period), the CFS
limit is lifted, and its shell and the commands it runs, popen()s too,
run under SCHED_RR in the host's cgroup. Without it, the host is refused
with a message that names what is missing, before anything is built.
Also: popen() of a cfs host runs in that host's cgroup."""

import os
import time

from mininet.net import Mininet
from mininet.node import CPULimitedHost
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo
from mininet.util import custom


def cgroupOf(pid, controller='cpu'):
    with open('/proc/%d/cgroup' % pid) as f:
        for line in f:
            _, ctrls, path = line.strip().split(':', 2)
            if controller in ctrls.split(',') or ctrls == '':
                return path
    return None


def policy(pid):
    return os.sched_getscheduler(pid)


rtOK = os.path.exists('/sys/fs/cgroup/cpu/cpu.rt_runtime_us')
host = custom(CPULimitedHost, sched='rt', cpu=0.1)
if not rtOK:
    try:
        Mininet(topo=SingleSwitchTopo(2), controller=None,
                switch=LinuxBridge, host=host)
    except Exception as e:
        assert 'RT group scheduling' in str(e), e
    else:
        raise AssertionError("sched='rt' built without RT group scheduling")
else:
    net = Mininet(topo=SingleSwitchTopo(2), controller=None,
                  switch=LinuxBridge, host=host)
    net.start()
    h1 = net['h1']
    d = h1.cgroupDir()
    with open(os.path.join(d, 'cpu.rt_runtime_us')) as f:
        assert f.read().strip() == '10000'
    with open(os.path.join(d, 'cpu.cfs_quota_us')) as f:
        assert f.read().strip() == '-1'
    shell = int(h1.cmd('echo $$'))
    assert policy(shell) == os.SCHED_RR, policy(shell)
    h1.cmd('sleep 30 &')
    job = h1.lastPid
    assert policy(job) == os.SCHED_RR
    assert os.sched_getparam(job).sched_priority == 20
    p = h1.popen(['sleep', '30'])
    # popen returns once hymn exec runs; the cgroup join and chrt follow
    # within milliseconds.
    for _ in range(100):
        if policy(p.pid) == os.SCHED_RR and 'sleep' in open(
                '/proc/%d/comm' % p.pid).read():
            break
        time.sleep(0.02)
    assert policy(p.pid) == os.SCHED_RR, policy(p.pid)
    want = '/' + os.path.basename(d)
    assert cgroupOf(p.pid) == want, (cgroupOf(p.pid), want)
    p.kill()
    p.wait()
    h1.cmd('kill %d' % job)
    net.stop()

# A cfs host's popen() runs in its cgroup too (Mininet's mnexec -g).
net = Mininet(topo=SingleSwitchTopo(2), controller=None, switch=LinuxBridge,
              host=custom(CPULimitedHost, cpu=0.2))
net.start()
h1 = net['h1']
p = h1.popen(['sleep', '30'])
for _ in range(100):
    if 'sleep' in open('/proc/%d/comm' % p.pid).read():
        break
    time.sleep(0.02)
want = '/' + os.path.basename(h1.cgroupDir())
assert cgroupOf(p.pid) == want, (cgroupOf(p.pid), want)
assert policy(p.pid) == os.SCHED_OTHER
p.kill()
p.wait()
net.stop()
print('OK')
