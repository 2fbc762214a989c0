"""Two hosts on two switches, written the way Mininet's custom example is:

   host --- switch --- switch --- host

Load it with: hymn --custom custom-2sw2host.py --topo twosw --test pingall
"""

from mininet.topo import Topo


class TwoSwitchTopo( Topo ):
    "Two switches in a row, a host on each end."

    def build( self ):
        "Add the nodes, then wire them left to right."
        left = self.addHost( 'h1' )
        right = self.addHost( 'h2' )
        leftSwitch = self.addSwitch( 's3' )
        rightSwitch = self.addSwitch( 's4' )

        self.addLink( left, leftSwitch )
        self.addLink( leftSwitch, rightSwitch )
        self.addLink( rightSwitch, right )


topos = { 'twosw': ( lambda: TwoSwitchTopo() ) }
