"""A router between two subnets, in the style of Mininet's linuxrouter
example, plus parameters a real Mininet script passes: classes, partials,
per-interface params, options hymn does not know, and spec arguments."""

from functools import partial

from mininet.log import setLogLevel, info
from mininet.net import Mininet
from mininet.node import Node, CPULimitedHost, OVSKernelSwitch
from mininet.link import TCLink
from mininet.topo import Topo
from mininet.util import irange, dumpNodeConnections
from mininet.cli import CLI


class LinuxRouter( Node ):
    "A node with IP forwarding on."

    def config( self, **params ):
        super( LinuxRouter, self ).config( **params )
        self.cmd( 'sysctl net.ipv4.ip_forward=1' )

    def terminate( self ):
        self.cmd( 'sysctl net.ipv4.ip_forward=0' )
        super( LinuxRouter, self ).terminate()


class Gateway( Node ):
    "No 'Router' in the name: found by what config() runs."

    def config( self, **params ):
        super( Gateway, self ).config( **params )
        self.cmd( 'echo 1 > /proc/sys/net/ipv4/ip_forward' )


class MyHost( Node ):
    "A user class hymn cannot run."


class NetworkTopo( Topo ):
    "n hosts per side, link delay given as an argument."

    def build( self, n=1, delay='1ms', **_opts ):
        router = self.addNode( 'r0', cls=LinuxRouter, ip='192.168.1.1/24' )
        self.addNode( 'g0', cls=Gateway )
        s1, s2 = [ self.addSwitch( s, cls=OVSKernelSwitch ) for s in ( 's1', 's2' ) ]
        self.addLink( s1, router, intfName2='r0-eth1',
                      params2={ 'ip': '192.168.1.1/24' } )
        self.addLink( s2, router, intfName2='r0-eth2',
                      params2={ 'ip': '172.16.0.1/12' } )
        for i in irange( 1, n ):
            h = self.addHost( 'h%d' % i, ip='192.168.1.%d/24' % ( 100 + i ),
                              defaultRoute='via 192.168.1.1',
                              cls=partial( CPULimitedHost, cpu=0.5 ),
                              memory='512M', colour='blue', inNamespace=True )
            self.addLink( h, s1, cls=TCLink, delay=delay, bw=10,
                          use_htb=True, addr1='00:00:00:00:01:%02x' % i )
        self.addHost( 'x1', cls=MyHost, ip=None )
        self.addLink( 'x1', s2, port2=9 )


def run():
    "Never called by hymn: __name__ is not '__main__' when mn loads a file."
    net = Mininet( topo=NetworkTopo() )
    net.start()
    CLI( net )


if __name__ == '__main__':
    setLogLevel( 'info' )
    run()

info( '*** custom-router.py loaded\n' )
print( 'printing does not disturb hymn' )
topos = { 'router': NetworkTopo }
