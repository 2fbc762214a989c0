"""Run a Mininet custom topology file for hymn.

Usage: python3 hymn_custom.py REQUEST.json RESULT.json

The request names the file, the topology (a key of the file's topos
dictionary) and its arguments. The file is exec'd as mn --custom does,
against hymn's mininet package (the one "hymn python" runs, extracted beside
this script, so it comes first on sys.path), the topology is built (Topo
records what build() adds, in order), and its nodes and links are written
to RESULT.json for hymn to turn into its own model. Nothing else is written
to the result, so whatever the file prints cannot corrupt it.

Importing the package starts nothing; only a network would reach hymn. So
before the file runs, guard() makes what would build or reach one (a
Mininet object, the CLI, a connection to hymn) raise CustomFileError
naming what to use instead, and cleanup() a no-op.
"""

import functools
import json
import sys
import traceback
import types


class CustomFileError(Exception):
    "The file used a part of Mininet that runs a network."


def refuse(what):
    "A replacement __init__ that explains why what cannot run here."
    def fail(*_args, **_kwargs):
        raise CustomFileError(
            '%s is not possible while hymn reads a custom topology file '
            '(--custom): hymn builds only the topologies of its topos '
            'dictionary; to run a script that builds its own network, use '
            '"hymn python SCRIPT"' % what)
    return fail


def guard(warnings):
    """Make the package's parts that run a network refuse, before the
    file runs (a file may call them at import time)."""
    import mininet.net
    import mininet.cli
    import mininet.clean
    import mininet._hymn
    mininet.net.Mininet.__init__ = refuse('Creating a Mininet object')
    mininet.cli.CLI.__init__ = refuse('Starting the Mininet CLI')
    mininet._hymn.Connection.__init__ = refuse('Reaching a hymn network')

    def cleanup(*_args, **_kwargs):
        warnings.append('the file called mininet.clean.cleanup() while '
                        'being loaded; hymn skipped it (hymn clean does it)')
    mininet.clean.cleanup = cleanup
    mininet.clean.Cleanup.cleanup = classmethod(cleanup)


def write(path, obj):
    with open(path, 'w') as f:
        json.dump(obj, f)


def failure(exc, filename):
    "The exception's last traceback line and where in the user's file."
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    where = None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        where = exc.lineno
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            where = tb.tb_lineno
        tb = tb.tb_next
    return {'error': last, 'line': where,
            'traceback': ''.join(traceback.format_exception(
                type(exc), exc, exc.__traceback__))}


def make_numeric(s):
    "mn's makeNumeric: int, else float, else the string."
    for conv in (int, float):
        try:
            return conv(s)
        except (TypeError, ValueError):
            pass
    return s


def text(v):
    "A parameter value as the string hymn stores (None means absent)."
    if v is None:
        return None
    if isinstance(v, (bool, int, float, str)):
        return str(v)
    if isinstance(v, type):
        return v.__name__
    if isinstance(v, functools.partial):
        return text(v.func)
    cls = getattr(v, 'hymn_class', None)
    if cls is not None:
        return text(cls)
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        return v.__name__
    return str(v)


def mentions_ip_forward(cls):
    "Does any method of cls contain a string that turns IP forwarding on?"
    def consts(code):
        for c in code.co_consts:
            if isinstance(c, str):
                yield c
            elif isinstance(c, types.CodeType):
                yield from consts(c)
    for klass in cls.__mro__:
        for attr in vars(klass).values():
            fn = getattr(attr, '__func__', attr)
            code = getattr(fn, '__code__', None)
            if code is None:
                continue
            for s in consts(code):
                if 'ip_forward' in s:
                    return True
    return False


def unwrap(cls):
    "Return (class, default params) for a class, partial or custom()."
    params = {}
    while True:
        if isinstance(cls, functools.partial):
            merged = dict(cls.keywords or {})
            merged.update(params)
            params, cls = merged, cls.func
        elif getattr(cls, 'hymn_class', None) is not None:
            merged = dict(cls.hymn_params)
            merged.update(params)
            params, cls = merged, cls.hymn_class
        else:
            return cls, params


def classify(name, cls, warnings):
    "The hymn kind for a node class, with a warning when hymn differs."
    from mininet.node import Switch, Controller
    from mininet.nodelib import NAT
    if not isinstance(cls, type):
        warnings.append('%s: cls=%s is not a class; built as a host'
                        % (name, text(cls)))
        return 'host'
    ours = cls.__module__.startswith('mininet')
    if issubclass(cls, Switch):
        if not ours:
            warnings.append('%s: cls=%s is built as a hymn switch (a '
                            'learning bridge); its Python code is not run'
                            % (name, cls.__name__))
        return 'switch'
    if any('router' in k.__name__.lower() for k in cls.__mro__) or \
            mentions_ip_forward(cls):
        if not ours:
            warnings.append('%s: cls=%s is built as a hymn router (IPv4 '
                            'forwarding on); its Python code is not run'
                            % (name, cls.__name__))
        return 'router'
    if issubclass(cls, (NAT, Controller)):
        warnings.append('%s: cls=%s is not supported here; built as a host'
                        % (name, cls.__name__))
    elif not ours:
        warnings.append('%s: cls=%s is built as a plain host; its Python '
                        'code is not run' % (name, cls.__name__))
    return 'host'


def describe_controller(key, value, warnings):
    """What --controller KEY means for an entry of a custom file's
    controllers dict: mn calls it with the controller's name."""
    from mininet.node import Controller, OVSController, RemoteController
    try:
        obj = value('c0')
    except BaseException as e:  # the user's code may raise anything
        warnings.append('controllers[%s] failed: %s' % (key, e))
        return None
    if not isinstance(obj, Controller):
        warnings.append('controllers[%s] is not a Controller; ignored' % key)
        return None
    if isinstance(obj, RemoteController):
        kind = 'remote'
    elif isinstance(obj, OVSController):
        kind = 'ovsc'
    elif type(obj) is Controller:
        kind = 'ref'
    else:
        warnings.append('controllers[%s]: %s is not supported (hymn runs '
                        'ref, ovsc and remote); ignored'
                        % (key, type(obj).__name__))
        return None
    out = {'kind': kind}
    ip, port = getattr(obj, 'ip', None), getattr(obj, 'port', None)
    if ip is not None:
        out['ip'] = text(ip)
    # 6653 is every controller class's default; left out, it lets hymn
    # move a controller it runs to the next free port when another
    # network holds 6653 (for a remote one the two are the same).
    if port is not None and (kind == 'remote' or port != 6653):
        out['port'] = text(port)
    return out


def node_params(name, info, warnings):
    kind = 'switch' if info.get('isSwitch') else None
    opts = dict(info)
    opts.pop('isSwitch', None)
    cls = opts.get('cls')
    if cls is not None:
        real, defaults = unwrap(cls)
        for k, v in defaults.items():
            opts.setdefault(k, v)
        opts['cls'] = real
        ckind = classify(name, real, warnings)
        if kind is None or ckind == 'switch':
            kind = ckind
    params = {}
    for k, v in opts.items():
        if v is None:
            # Mininet skips options set to None; ip=None means no address.
            if k == 'ip':
                params['ip'] = 'none'
            continue
        params[str(k)] = text(v)
    return kind or 'host', params


def link_params(info):
    params = {}
    for k, v in info.items():
        if k in ('node1', 'node2', 'port1', 'port2'):
            continue
        if k in ('params1', 'params2') and isinstance(v, dict):
            # Per-interface options: ip and mac are the end's address.
            end = k[-1]
            for pk, pv in v.items():
                if pv is None:
                    continue
                key = {'ip': 'ip', 'mac': 'mac'}.get(pk)
                params[(key + end) if key else '%s.%s' % (k, pk)] = text(pv)
            continue
        if k in ('addr1', 'addr2'):
            if v is not None:
                params['mac' + k[-1]] = text(v)
            continue
        if k == 'cls' and v is not None:
            v, defaults = unwrap(v)
            for dk, dv in defaults.items():
                if dk not in info and dv is not None:
                    params[str(dk)] = text(dv)
        if v is None:
            continue
        params[str(k)] = text(v)
    return params


def main():
    request_path, result_path = sys.argv[1], sys.argv[2]
    with open(request_path) as f:
        req = json.load(f)
    filename = req['file']
    customs = {}
    warnings = []
    guard(warnings)
    try:
        with open(filename) as f:
            source = f.read()
        # As mn --custom does: the file runs with its own globals and
        # __name__ is not '__main__', so its "if __name__" block is skipped.
        exec(compile(source, filename, 'exec'), customs, customs)
    except SystemExit as e:
        write(result_path, {'error': 'the file called exit(%s) while being '
                            'loaded' % (e.code,), 'line': None})
        return
    except BaseException as e:  # the user's code may raise anything
        write(result_path, failure(e, filename))
        return

    controllers = {}
    if isinstance(customs.get('controllers'), dict):
        for key, value in customs['controllers'].items():
            c = describe_controller(str(key), value, warnings)
            if c is not None:
                controllers[str(key)] = c
    for key in ('hosts', 'switches', 'tests', 'validate'):
        if key in customs:
            warnings.append('the file defines %s; hymn uses only its topos '
                            'and ignores %s' % (key, key))
    topos = customs.get('topos', {})
    if not isinstance(topos, dict):
        write(result_path, {'error': 'topos must be a dictionary from name '
                            'to topology class, got %s' % type(topos).__name__,
                            'line': None})
        return
    name = req['name']
    if name not in topos:
        write(result_path, {'missing': True,
                            'available': sorted(str(k) for k in topos)})
        return
    args = [make_numeric(a) for a in req.get('args') or []]
    kwargs = {k: make_numeric(v) for k, v in (req.get('kwargs') or [])}
    try:
        topo = topos[name](*args, **kwargs)
    except BaseException as e:
        write(result_path, failure(e, filename))
        return
    from mininet.topo import Topo
    if not isinstance(topo, Topo):
        write(result_path, {'error': "topos['%s'] returned %s, not a Topo"
                            % (name, type(topo).__name__), 'line': None})
        return
    nodes = []
    for node, info in topo.g.node.items():
        kind, params = node_params(node, info or {}, warnings)
        nodes.append({'name': str(node), 'kind': kind, 'params': params})
    links = []
    for _src, _dst, _key, info in topo.g.edges_iter(data=True, keys=True):
        links.append({'node1': str(info.get('node1')),
                      'node2': str(info.get('node2')),
                      'port1': info.get('port1'), 'port2': info.get('port2'),
                      'params': link_params(info)})
    write(result_path, {'nodes': nodes, 'links': links,
                        'controllers': controllers, 'warnings': warnings})


if __name__ == '__main__':
    main()
