"""Mininet's low-level API has no stop(): a node made with Host(), linked
to a node in the root namespace, runs a daemon (a web server that leaves
its shell's session, as sshd does) and a plain background job, and the
script ends. As in Mininet, the job ends with the shell's hangup and the
daemon keeps the node, reachable from the root namespace, until hymn
clean. With "nodaemon" there is only the job, and nothing stays."""

import sys

from mininet.node import Host

h1 = Host('lgh1')
root = Host('lgr0', inNamespace=False)
h1.linkTo(root)
h1.setIP('10.77.0.1', 24)
root.setIP('10.77.0.2', 24)
h1.cmd('sleep 600 &')
if sys.argv[1:] != ['nodaemon']:
    h1.cmd('setsid python3 -m http.server --bind 10.77.0.1 8777 '
           '</dev/null >/dev/null 2>&1 &')
    h1.cmd('for i in $(seq 50); do python3 -c "import socket; '
           "socket.create_connection(('10.77.0.1', 8777), 0.2)\" "
           '2>/dev/null && break; sleep 0.1; done')
print('RUN %s' % h1.net.hymnRun)
