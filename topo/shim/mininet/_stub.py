"""Placeholders for Mininet names the stand-in does not model."""


class StandInError(Exception):
    "Raised when a custom file uses a part of Mininet hymn does not emulate."


def unsupported(what):
    "A callable that explains, when called, that hymn does not run it."
    def fail(*_args, **_kwargs):
        raise StandInError(
            "%s is not available when hymn loads a custom topology file: "
            "hymn only reads the topologies in the file's topos dictionary"
            % what)
    fail.__name__ = what.rsplit('.', 1)[-1]
    return fail


def module_getattr(module, base):
    """Return a module-level __getattr__ that makes unknown names importable:
    each becomes a subclass of base, so 'from mininet.node import X' and
    'class MyX(X)' work for names this stand-in does not know."""
    made = {}

    def getattr_(name):
        if name.startswith('__'):
            raise AttributeError(name)
        if name not in made:
            made[name] = type(name, (base,), {'__module__': module})
        return made[name]
    return getattr_
