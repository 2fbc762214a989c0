#!/usr/bin/env python3
"""Imitates a shared host taking a vCPU away, to find timing tests that one
such stall fails.

CI runs on a virtual machine whose host now and then does not run one of
its vCPUs for 10-30 ms (a failed CI run saw a 17 ms hole in a probe
stream). A test that measures time should survive a few of those. This
script makes them here: one process per CPU, each pinned to its CPU at
SCHED_FIFO priority 99 (above hymn's real-time threads), spins for a
random 10-25 ms at random intervals of 2-6 s, and sleeps otherwise (under
1 % of a CPU). All CPUs stall at the same moments, as when the host stops
the whole VM (a thread stalled on one CPU would otherwise just move to
another); --independent stalls each CPU on its own schedule. Interrupts
and softirqs still run during a stall, so the kernel's part of a path is
spared: the real thing is harsher. Run it beside a test, then stop it:

    sudo ./scripts/stall-inject.py &   # then: go test ...; kill %1

It prints one line per stall to stderr when -v is given.
"""
import argparse
import os
import random
import signal
import sys
import time


def stall_loop(cpu: int, seed: int, start: float, verbose: bool) -> None:
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(99))
    rnd = random.Random(seed)
    at = start
    while True:
        # Absolute times on the monotonic clock, so that CPUs sharing a
        # seed stay in step.
        at += rnd.uniform(2.0, 6.0)
        length = rnd.uniform(0.010, 0.025)
        time.sleep(max(0.0, at - time.monotonic()))
        end = at + length
        while time.monotonic() < end:
            pass
        if verbose:
            print(f"stall-inject: cpu {cpu} stalled {length * 1000:.1f} ms", file=sys.stderr, flush=True)


def main() -> int:
    # --help must explain and stop, and a mistyped flag must not start
    # stalling the machine: parse before anything runs.
    parser = argparse.ArgumentParser(
        prog="stall-inject.py",
        description="Stall every CPU for 10-25 ms at random intervals of 2-6 s "
        "(SCHED_FIFO 99 spinners), as a shared host does to its VMs, until stopped.")
    parser.add_argument("-v", action="store_true", help="print one line per stall to stderr")
    parser.add_argument("--independent", action="store_true",
                        help="stall each CPU on its own schedule instead of all at once")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("stall-inject: needs root (SCHED_FIFO 99)", file=sys.stderr)
        return 2
    verbose = args.v
    independent = args.independent
    seed = random.SystemRandom().randrange(1 << 30)
    start = time.monotonic()
    children = []
    for cpu in sorted(os.sched_getaffinity(0)):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            stall_loop(cpu, seed + cpu if independent else seed, start, verbose)
            os._exit(0)
        children.append(pid)

    def stop(*_):
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for _ in children:
        os.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
