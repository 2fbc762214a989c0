"""The connection to hymn: starts "hymn pyserve" and speaks its protocol.

The network lives in that hymn process; this module only sends requests
(one JSON object a line, each with an id) and waits for the answer with
the same id. Answers may come out of order, so a reader thread hands each
to the caller waiting for it. When this process ends, however it ends, the
socket closes and hymn removes the network (unless --keep).
"""

import atexit
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

PROTOCOL_VERSION = 1


class HymnError(Exception):
    "A request hymn refused or failed; kind says which kind of failure."

    def __init__(self, msg, kind='network'):
        Exception.__init__(self, msg)
        self.kind = kind


def hymnBinary():
    "The hymn binary: hymn python's own, else the one on PATH."
    path = os.environ.get('HYMN_BIN') or shutil.which('hymn')
    if not path:
        raise HymnError('hymn is not found: run the script with '
                        '"hymn python SCRIPT", or put hymn on PATH', 'usage')
    return path


def defaults():
    "The backend defaults hymn python was given (--nodes, --links, ...)."
    return {'nodes': os.environ.get('HYMN_PY_NODES', ''),
            'links': os.environ.get('HYMN_PY_LINKS', ''),
            'switch': os.environ.get('HYMN_PY_SWITCH', ''),
            'keep': os.environ.get('HYMN_PY_KEEP', '') == '1'}


class Connection(object):
    "One hymn pyserve process and its socket."

    def __init__(self, keep=None):
        if keep is None:
            keep = defaults()['keep']
        self.dir = tempfile.mkdtemp(prefix='hymn-py-')  # 0700
        path = os.path.join(self.dir, 'sock')
        argv = [hymnBinary(), 'pyserve', '--socket', path]
        if keep:
            argv.append('--keep')
        if os.environ.get('HYMN_PY_DEBUG'):
            argv.append('--debug')
        # A session of its own: Ctrl-C in the terminal reaches the
        # script (which may catch it and stop the network), not hymn.
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            close_fds=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if line.strip() != b'ready':
            self.proc.wait()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise HymnError('hymn pyserve did not start (exit status %s)'
                            % self.proc.returncode)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        # Spawned shells and popen()s must not hold the socket open: the
        # network ends when this process does.
        os.set_inheritable(self.sock.fileno(), False)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.rfile = self.sock.makefile('rb')
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.pending = {}
        self.closed = False
        # Run by close() first, while the connection still answers.
        self.beforeClose = []
        hello = json.loads(self.rfile.readline() or b'{}')
        if hello.get('hello') != 'hymn-pyapi':
            raise HymnError('hymn pyserve sent no hello')
        if hello.get('version') != PROTOCOL_VERSION:
            raise HymnError('hymn speaks protocol version %s, this mininet '
                            'package %s: use the package of this hymn '
                            '(hymn python --path)'
                            % (hello.get('version'), PROTOCOL_VERSION))
        # The link options a TCIntf hands to the emulator: hymn's table
        # says which, so a parameter it adds needs no edit here.
        if hello.get('link_keys'):
            from mininet import link
            link.TC_KEYS = tuple(hello['link_keys'])
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request('hello', version=PROTOCOL_VERSION)
        atexit.register(self.close)

    def _read(self):
        for line in self.rfile:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                waiter = self.pending.pop(msg.get('id'), None)
            if waiter is not None:
                waiter[1] = msg
                waiter[0].set()
        with self.lock:
            self.closed = True
            waiters = list(self.pending.values())
            self.pending.clear()
        for w in waiters:
            w[1] = {'ok': False, 'error': 'hymn pyserve went away',
                    'kind': 'network'}
            w[0].set()

    def request(self, op, **args):
        "Send one request and return its result, or raise HymnError."
        rid = next(self.ids)
        waiter = [threading.Event(), None]
        data = json.dumps({'id': rid, 'op': op, 'args': args}) + '\n'
        with self.lock:
            if self.closed:
                raise HymnError('the connection to hymn is closed '
                                '(the network was stopped)', 'state')
            self.pending[rid] = waiter
        try:
            self.sock.sendall(data.encode())
        except OSError as e:
            raise HymnError('sending to hymn: %s' % e)
        # wait() in slices, so Ctrl-C reaches the script while it waits
        while not waiter[0].wait(0.5):
            pass
        msg = waiter[1]
        if not msg.get('ok'):
            kind = msg.get('kind', 'network')
            if kind == 'unsupported':
                raise NotImplementedError(msg.get('error'))
            raise HymnError(msg.get('error', 'unknown error'), kind)
        return msg.get('result')

    def close(self):
        "End the connection: hymn removes the network (unless --keep)."
        if self.sock is None:
            return
        hooks, self.beforeClose = self.beforeClose, []
        for hook in hooks:
            try:
                hook()
            except Exception as e:  # the network goes all the same
                warn('before closing the connection: %s' % e)
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.sock.close()
        self.sock = None
        self.reader.join(1)


_shared = [None]


def shared():
    "The process's connection, started on first use."
    if _shared[0] is None or _shared[0].sock is None:
        _shared[0] = Connection()
    return _shared[0]


def warn(msg):
    sys.stderr.write('*** hymn: %s\n' % msg)
