from mininet.topo import Topo

topos = { 'oops': lambda: Topo( }
