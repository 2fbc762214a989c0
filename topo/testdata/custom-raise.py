from mininet.topo import Topo


class Broken( Topo ):
    def build( self ):
        self.addHost( 'h1' )
        self.addSwitch( 's1' )
        raise ValueError( 'no room for h2' )


topos = { 'broken': Broken, 'fine': lambda: Topo() }
