"""How much of the machine other processes took during a window, and how often this process was
pushed off a core: read before and after a stretch of timing, to tell a disturbed stretch apart.

Method. `snapshot()` reads three counters, none of which spawns anything or walks /proc (a few µs):
- the machine's busy CPU time: the first line of /proc/stat, user + nice + system + irq + softirq +
  steal (guest time is already inside user), in clock ticks (os.sysconf("SC_CLK_TCK")) → seconds;
- this process's own CPU time, user + system of every thread (getrusage(RUSAGE_SELF), µs);
- this process's involuntary context switches, every thread (getrusage's ru_nivcsw: a thread was
  runnable but the scheduler gave its core to another task).
`Snapshot.since(earlier)` gives a `Window`: `other_cpu_s` = the machine's busy time minus this
process's, `own_cpu_s` = this process's, `wall_s`, `involuntary`, `cores` (the machine's, as
/proc/stat counts them); `other_cores` = other_cpu_s / wall_s, how many cores the other processes
used on average; `own_cores`, how many this process kept busy (what it needed: a step waiting on a
GPU keeps about one); `idle_cores`, how many nobody used. Where /proc/stat or getrusage is missing
(macOS, Windows), `snapshot()` returns None and `why_not()` says why.

Pitfalls.
- Resolution: /proc/stat counts in clock ticks of 10 ms (USER_HZ 100), truncated at each read, so a
  window's busy time is off by up to one tick (RESOLUTION_S) either way: on a round of ~20 ms that is
  ±0.5 of a core. Compare a short window's `other_cpu_s` against at least one tick, never less; the
  median over many windows is fine (the errors do not accumulate in one direction).
- The kernel samples busy time at its timer tick while this process's own time is exact, so a
  window's difference can come out slightly negative; `other_cores` clamps it at 0.
- "Others" is everything but this process: other programs, kernel threads (kworkers, ksoftirqd),
  the parent process that prints progress, and time a hypervisor stole (steal). All of it took a
  core this process could have used.
- A window's figure is an average: a 5 ms burst in a 1 s window reads as 0.005 of a core. A
  disturbance shorter than the window is diluted, not lost.
- The machine-wide figure cannot say whose core was taken: on a machine with more cores than this
  process uses, others may run beside it without slowing it (16 cores, a GPU-bound step keeping one
  busy, one core of others: 14 stay idle). `idle_cores` tells: others took a core this process
  needed only when the machine had no core left idle. The caller judges that
  (probes/timing.py's `_loaded`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

STAT = "/proc/stat"
# /proc/stat fields after "cpu": user nice system idle iowait irq softirq steal guest guest_nice;
# busy = user + nice + system + irq + softirq + steal (guest is counted inside user already)
_BUSY_FIELDS = (1, 2, 3, 6, 7, 8)


def _ticks_per_s() -> int | None:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return None


TICKS_PER_S = _ticks_per_s()
# one clock tick: what a window's busy time can be off by (see the docstring)
RESOLUTION_S = 1 / TICKS_PER_S if TICKS_PER_S else 0.01


def machine_cores() -> int:
    """The cores /proc/stat's first line adds up: every online core of the machine (not this
    process's affinity mask, which /proc/stat does not follow)."""
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Window:
    """What happened between two snapshots."""

    other_cpu_s: float  # CPU time all other processes (and the kernel) took on the machine
    wall_s: float
    involuntary: int  # times a thread of this process was pushed off its core
    # this process's own CPU time, every thread (None: not read, e.g. a window made by hand)
    own_cpu_s: float | None = None
    cores: int = 0  # the machine's cores (0: this machine's, machine_cores())

    @property
    def machine(self) -> int:
        return self.cores or machine_cores()

    def _cores(self, cpu_s: float) -> float:
        """`cpu_s` as cores on average over the window, within 0 and the machine's cores:
        /proc/stat counts in 10 ms ticks, so one tick over a 1.6 ms round read 6.1 cores on a
        2-core machine (an impossible figure, shown as other_cores_max)."""
        if self.wall_s <= 0:
            return 0.0
        return min(float(self.machine), max(0.0, cpu_s) / self.wall_s)

    @property
    def other_cores(self) -> float:
        """How many cores the others used on average during the window."""
        return self._cores(self.other_cpu_s)

    @property
    def own_cores(self) -> float | None:
        """How many cores this process kept busy on average: what it needed (None: not read)."""
        return None if self.own_cpu_s is None else self._cores(self.own_cpu_s)

    @property
    def idle_cores(self) -> float | None:
        """How many cores nobody used on average (None: this process's own time not read)."""
        own = self.own_cpu_s
        if own is None:
            return None
        return max(0.0, self.machine - self._cores(self.other_cpu_s + own))


@dataclass(frozen=True)
class Snapshot:
    wall_s: float  # time.perf_counter()
    busy_s: float  # the machine's busy CPU time since boot, every core
    own_s: float  # this process's CPU time, every thread
    involuntary: int  # this process's involuntary context switches, every thread

    def since(self, earlier: Snapshot) -> Window:
        return Window(
            other_cpu_s=(self.busy_s - earlier.busy_s) - (self.own_s - earlier.own_s),
            wall_s=self.wall_s - earlier.wall_s,
            involuntary=self.involuntary - earlier.involuntary,
            own_cpu_s=self.own_s - earlier.own_s,
            cores=machine_cores(),
        )


_fd: int | None = None
_why_not: str | None = None


def _busy_s() -> float:
    """The machine's busy CPU seconds (one pread of an fd kept open: no open/close per read)."""
    global _fd
    if _fd is None:
        _fd = os.open(STAT, os.O_RDONLY)
    line = os.pread(_fd, 512, 0).split(b"\n", 1)[0].split()
    if not line or line[0] != b"cpu":
        raise ValueError(f"{STAT} does not start with the 'cpu' line")
    return sum(int(line[i]) for i in _BUSY_FIELDS) / TICKS_PER_S


def snapshot() -> Snapshot | None:
    """The counters now; None where they cannot be read (why_not() says why)."""
    global _why_not, _fd
    if _why_not is not None:
        return None
    try:
        import resource

        if not TICKS_PER_S:
            raise ValueError("no SC_CLK_TCK (clock ticks per second) on this platform")
        busy = _busy_s()
        ru = resource.getrusage(resource.RUSAGE_SELF)
    except (ImportError, OSError, ValueError, IndexError, AttributeError) as e:
        _why_not = f"the machine's CPU time is not readable here ({type(e).__name__}: {e})"
        if _fd is not None:
            try:
                os.close(_fd)
            except OSError:
                pass
            _fd = None
        return None
    return Snapshot(time.perf_counter(), busy, ru.ru_utime + ru.ru_stime, ru.ru_nivcsw)


def why_not() -> str | None:
    """Why snapshot() returns None here (None while it works; tries a read first)."""
    if _why_not is None:
        snapshot()
    return _why_not


def reset() -> None:
    """Forget a failed read and the open file (tests; a process that changed its /proc)."""
    global _why_not, _fd
    if _fd is not None:
        try:
            os.close(_fd)
        except OSError:
            pass
    _fd, _why_not = None, None
