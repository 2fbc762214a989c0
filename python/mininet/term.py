"""mininet.term for hymn: X terminals are not part of hymn."""


def _none(what):
    def fail(*_args, **_kwargs):
        raise NotImplementedError(
            'mininet.term.%s: hymn has no X terminals; open a shell in a '
            'node with hymn exec NODE' % what)
    return fail


makeTerm = _none('makeTerm')
makeTerms = _none('makeTerms')
runX11 = _none('runX11')
cleanUpScreens = _none('cleanUpScreens')
tunnelX11 = _none('tunnelX11')
