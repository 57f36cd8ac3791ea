"""Produce requests and the connection a producer holds to each broker (docs/kafka-internals.md §5, §6)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generator, NamedTuple

import numpy as np
import simpy

from kafkasim.model.accumulator import ProducerBatch
from kafkasim.model.host import call_at, trigger_at
from kafkasim.model.pipes import Pipe, transfer

REQUEST_HEADER_BYTES = 80        # request header + produce request fields (acks, timeout, topic name)
PARTITION_HEADER_BYTES = 12      # per partition entry: index + records length
RESPONSE_BYTES_PER_PARTITION = 40
# The broker's socket receive buffer: socket.receive.buffer.bytes' default (102400), doubled by Linux as it is set
RECEIVE_BUFFER = 2 * 102400
REQUEST_METRICS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs", "ResponseSendTimeMs",
                   "TotalTimeMs")


class RequestTimes(NamedTuple):
    """When the broker took a request through each stage (RequestChannel.Request's timestamps), in seconds."""
    start: float                  # read from the socket begins
    queued: float                 # on the request queue
    dequeued: float               # an I/O thread takes it
    local_done: float             # appended to the leader's log
    remote_done: float            # followers confirmed (acks=all), else = local_done
    response_queued_done: float   # the network thread takes the response
    end: float                    # its last byte has left

    def metrics(self) -> dict[str, float]:
        return dict(zip(REQUEST_METRICS, self.metrics_ms()))

    def metrics_ms(self, ms=1000.0) -> tuple:
        """REQUEST_METRICS from these times; works on numpy columns of many requests as well."""
        start, queued, dequeued, local_done, remote_done, response_queued_done, end = self
        return ((dequeued - queued) * ms, (local_done - dequeued + queued - start) * ms,
                (remote_done - local_done) * ms, (response_queued_done - remote_done) * ms,
                (end - response_queued_done) * ms, (end - start) * ms)


@dataclass(eq=False, slots=True)
class ProduceRequest:
    connection: "Connection"
    batches: list[ProducerBatch]
    created: float                     # ClientRequest.createdTimeMs: request-latency starts here
    size: int
    records: int
    written: float = np.nan            # last byte handed to the socket: the next request may be sent
    arrived: float = np.nan            # last byte at the broker
    completed: float = np.nan          # response handled by the Sender
    times: tuple | None = None         # the broker's RequestTimes, once it has answered

    @property
    def timing(self) -> dict[str, float]:
        """The broker's RequestMetrics for this request in ms (RequestQueueTimeMs, LocalTimeMs, ...); {} while
        unanswered."""
        return {} if self.times is None else self.times.metrics()


class Connection:
    """One producer's connection to one broker: the in-flight queue, and the pipes its bytes cross.

    TCP is reduced to its rate limits: a request's bytes cross every pipe on the path (the connection's own
    window/RTT limit, NICs, any capped link) and arrive one-way latency later. canSendMore needs the newest
    request fully written, i.e. all but the last send.buffer.bytes of it on the wire. TCP's flow control: the bytes
    the broker has not read (it reads a connection's next request once the previous response has left) fit in the two
    socket buffers; a request that does not fit is written as the broker reads those ahead of it.
    """

    STEADY_COUNTERS = ("window_full_seconds",)
    STEADY_CLOCKS = ("_full_since",)

    def __init__(self, env: simpy.Environment, index: int, broker, out_pipes: list[Pipe], back_pipes: list[Pipe],
                 one_way: float, max_in_flight: int, send_buffer: int, sender, connect: float = 0.0):
        self.env = env
        self.index = index
        self.broker = broker
        self.out_pipes = out_pipes
        self.slowest_out = min((p.rate for p in out_pipes), default=np.inf)
        self.back_pipes = back_pipes
        self.one_way = one_way
        self.max_in_flight = max_in_flight
        self.send_buffer = send_buffer
        self.sender = sender
        self.in_flight: list[ProduceRequest] = []
        self.arrived: deque[ProduceRequest] = deque()   # on their way or at the broker, not yet read
        self.unread = 0                                 # their bytes, of requests fully written
        self.blocked: deque[tuple[ProduceRequest, str]] = deque()   # requests waiting for room in the buffers
        self.broker_waiting: simpy.Event | None = None
        for pipe in back_pipes:
            (pipe.share_of or pipe).users += 1
        self.at_once: bool | None = None       # the broker serves this connection at once (Broker.serve_at_once)
        self.broker_idle_from = 0.0            # ... and its loop would next be free then
        self.unmuted_at = 0.0                  # ... once the last response has left the broker
        self.window_full_seconds = 0.0         # time spent with max.in.flight requests outstanding
        self.connect = connect                 # > 0: not connected yet; the first batch for this broker opens it
        self.ready_at = 0.0                    # ... and requests may go from then
        self._full_since = np.nan

    def can_send_more(self, now: float) -> bool:
        """InFlightRequests.canSendMore: nothing in flight, or the newest fully written and room for one more."""
        if self.ready_at > now:
            return False
        if self.connect:     # NetworkClient.ready initiates the connection; requests go once it is up
            self.ready_at, self.connect = now + self.connect, 0.0
            return False
        if not self.in_flight:
            return True
        return self.in_flight[-1].written <= now and len(self.in_flight) < self.max_in_flight

    def writable_at(self) -> float:
        """When can_send_more may next turn true by itself (connected, or the newest request finishing its write)."""
        if self.ready_at > self.env.now:
            return self.ready_at
        if self.in_flight and len(self.in_flight) < self.max_in_flight:
            return self.in_flight[-1].written
        return np.inf

    def send(self, request: ProduceRequest, acks: str) -> None:
        now = self.env.now
        end = transfer(self.out_pipes, now, request.size)
        # written: all but the last send.buffer.bytes on the wire (comparisons rather than max/min, per request)
        written = end - (request.size if request.size < self.send_buffer else self.send_buffer) / self.slowest_out
        request.written = written if written > now else now
        request.arrived = end + self.one_way
        self.in_flight.append(request)
        if len(self.in_flight) == self.max_in_flight:
            self._full_since = now
        if self.at_once is None:
            self.at_once = self.broker.serves_at_once(self, acks)
        if self.at_once:
            self.broker.serve_at_once(self, request)
        else:
            self._to_broker(request, request.arrived)
            if self.blocked or not self._fits(request.size):
                request.written = np.inf            # written once the broker has read enough of those ahead
                self.blocked.append((request, acks))
                return
            self.unread += request.size
        if acks == "0":
            # acks=0: the request is done once written; the Sender completes its batches then.
            self.env.timeout(request.written - now).callbacks.append(lambda _: self.sender.on_response(request))

    def _to_broker(self, request: ProduceRequest, when: float) -> None:
        self.arrived.append(request)
        if self.broker_waiting is not None:
            trigger_at(self.env, self.broker_waiting, when)
            self.broker_waiting = None    # (if the broker is still muted then, it waits a little longer)

    def hand_to_broker(self, request: ProduceRequest, start: float) -> None:
        """From serve_at_once: the broker's loop serves this request, starting at `start`, and all later ones."""
        self.at_once = False
        self.unread += request.size
        self._to_broker(request, start)

    def next_request(self, unmuted: float) -> Generator:
        """For the broker: wait for the next request to arrive (requests arrive in the order they were sent)
        and for the connection to be unmuted (the previous response sent)."""
        if not self.arrived:
            self.broker_waiting = self.env.event()
            yield self.broker_waiting
        ready = max(self.arrived[0].arrived, unmuted)
        if ready > self.env.now:
            yield self.env.timeout(ready - self.env.now)
        request = self.arrived.popleft()
        self.unread -= request.size
        self._unblock()
        return request

    def _fits(self, size: int) -> bool:
        """Whether a request of `size` bytes fits in the socket buffers beside the unread ones (a larger one than
        they hold streams through them while the broker reads it)."""
        return self.unread == 0 or self.unread + size <= self.send_buffer + RECEIVE_BUFFER

    def _unblock(self) -> None:
        """Requests waiting for room in the socket buffers are written, in order, as far as the room goes."""
        now = self.env.now
        while self.blocked and self._fits(self.blocked[0][0].size):
            request, acks = self.blocked.popleft()
            request.written = now
            self.unread += request.size
            if acks == "0":
                self.sender.on_response(request)
            else:
                self.sender.wakeup()

    def respond(self, request: ProduceRequest, size: int) -> float:
        """The broker sends the response; returns when its last byte has left."""
        return self.respond_at(request, size, self.env.now)

    def respond_at(self, request: ProduceRequest, size: int, now: float) -> float:
        end = transfer(self.back_pipes, now, size)
        arrival = end + self.one_way + self.broker.extra_latency
        call_at(self.env, now + (arrival - now), lambda _: self.sender.on_response(request))
        return end

    def remove(self, request: ProduceRequest) -> None:
        if len(self.in_flight) == self.max_in_flight:
            self.window_full_seconds += self.env.now - self._full_since
        self.in_flight.remove(request)
