"""The pipes bytes travel through: a NIC direction, a rate-limited link, a TCP window, and a NIC shared by its
flows (one a connection each way), booked by arithmetic rather than events."""
from __future__ import annotations


class Pipe:
    """A FIFO byte pipe of fixed bandwidth (a NIC direction, a rate-limited link, a TCP window).

    Pure arithmetic, no events: `reserve` (or `transfer`, through several) books the pipe and returns when the
    transfer ends. A NIC is shared per flow instead (`flow`): each TCP connection its own FIFO, all of them
    sharing the NIC's rate fairly.
    """

    STEADY_COUNTERS = ("busy_seconds", "bytes")
    STEADY_CLOCKS = ("free_at",)

    def __init__(self, name: str, bytes_per_second: float, share_of: "Pipe | None" = None):
        self.name = name
        self.rate = bytes_per_second
        self.free_at = 0.0
        self.busy_seconds = 0.0
        self.bytes = 0
        self.users = 0          # connections whose responses come back through it
        self.share_of = share_of          # the NIC this flow shares
        self.flows: list[Pipe] = []       # a NIC's flows

    def flow(self, name: str) -> "Pipe":
        """One flow (a connection's bytes one way) through this NIC: while k of its flows have bytes to send,
        each gets 1/k of the rate, as TCP's congestion control shares a link between connections (`transfer`)."""
        flow = Pipe(f"{self.name}: {name}", self.rate, self)
        self.flows.append(flow)
        return flow

    def reserve(self, earliest: float, size: int) -> float:
        """Book the pipe for `size` bytes from `earliest` or when it is free; returns when they have passed."""
        return transfer((self,), earliest, size)


def transfer(pipes: list[Pipe] | tuple[Pipe, ...], now: float, size: int) -> float:
    """Cut-through transfer of `size` bytes through pipes in series: returns when the last byte leaves the last
    pipe. Each pipe starts once the previous one has started (bytes stream through) and is free."""
    start = end = now
    for pipe in pipes:
        if pipe.free_at > start:
            start = pipe.free_at
        duration = size / pipe.rate
        nic = pipe.share_of
        if nic is not None:
            nic.busy_seconds += duration
            nic.bytes += size
            duration = _shared(nic, start, duration)
        pipe.free_at = finish = start + duration
        pipe.busy_seconds += duration
        pipe.bytes += size
        if finish > end:
            end = finish
    return end


def _shared(nic: Pipe, start: float, alone: float) -> float:
    """How long a flow's transfer from `start` takes that would take `alone` seconds on the NIC by itself: 1/k of
    the rate, k the NIC's flows sending then, itself included. The share is fixed when the transfer starts: a flow
    that starts later does not slow one already under way, nor does one that ends speed it up."""
    sending = 1
    for other in nic.flows:
        if other.free_at > start:
            sending += 1
    return alone * sending
