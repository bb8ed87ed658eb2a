"""The supervisor: starts the shard processes, serves routes and topic admin, restarts a
shard process that dies, and stops everything cleanly.

``rmq serve`` builds a :class:`ServeConfig` and calls :func:`serve`. The supervisor holds
``DIR/supervisor.lock`` so that two brokers never share a data directory, keeps the
queue assignment in ``DIR/routes.json`` (see :mod:`rmq.cluster.routes`) and describes the
running broker in ``DIR/serve.json`` (endpoints and pids) while it runs.
"""

from __future__ import annotations

import enum
import fcntl
import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2

from rmq import errors
from rmq.broker.route_handler import ProcessInfo, RouteHandler
from rmq.broker.server import LOOPBACK, Security, build_server
from rmq.broker.servicer import ROUTE_SERVICE, SHARD_SERVICE, route_service
from rmq.broker.validation import Limits
from rmq.client.channels import Credentials, open_channel
from rmq.cluster.files import write_json_atomically
from rmq.cluster.ports import Plan, bind_problem
from rmq.cluster.process import ShardProcess, ShardSettings
from rmq.cluster.protocol import EXIT_CANNOT_LISTEN
from rmq.cluster.routes import FILE_NAME, RouteTable, processes_for, shard_directories
from rmq.proto.v1 import broker_pb2 as pb
from rmq.proto.v1 import broker_pb2_grpc as pb_grpc

log = logging.getLogger("rmq.supervisor")

STATE_FILE = "serve.json"
LOCK_FILE = "supervisor.lock"
START_TIMEOUT = 300.0
STOP_TIMEOUT = 20.0
# A process that dies sooner than this after starting waits longer before the next try.
STABLE_AFTER = 10.0
MIN_BACKOFF = 0.2
MAX_BACKOFF = 10.0
ADMIN_TIMEOUT = 30.0


@dataclass
class ServeConfig:
    data_dir: Path
    shards: int
    host: str = LOOPBACK
    port: int = 8081
    # Ports of the shard processes; None means port+1, port+2, ... (or any free port
    # when port is 0).
    shard_ports: Sequence[int] | None = None
    flush: str | None = None
    store_options: dict[str, Any] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Name checked in the certificate when the supervisor calls its shards over TLS.
    tls_server_name: str | None = None
    max_workers: int = 64
    log_level: str = "INFO"


class State(enum.Enum):
    STARTING = "starting"
    SERVING = "serving"
    WAITING = "waiting to restart"
    STOPPED = "stopped"


class StartError(RuntimeError):
    """The broker could not start; the message says why."""


class _Slot:
    """One shard process and what the monitor knows about it."""

    def __init__(self, process: ShardProcess) -> None:
        self.process = process
        self.state = State.STOPPED
        self.restart_at = 0.0
        self.backoff = MIN_BACKOFF
        self.channel: grpc.Channel | None = None
        self.stub: pb_grpc.ShardStub | None = None


class Supervisor:
    """The Cluster the Route service talks to. Admin calls are serialized by a lock; the
    monitor thread is the only one that starts and stops processes."""

    def __init__(self, config: ServeConfig) -> None:
        if config.shards < 1:
            raise StartError(f"--shards is {config.shards}; at least one shard is needed")
        self.config = config
        self._data_dir = config.data_dir.resolve()
        self._admin_lock = threading.Lock()
        self._stop = threading.Event()
        self._lock_file: IO[str] | None = None
        self._slots: list[_Slot] = []
        self._routes = RouteTable(self._data_dir / FILE_NAME)
        self._ports = Plan(config.host, config.port, config.shards, config.shard_ports)
        self._server: grpc.Server | None = None
        self._health: Any = None
        self.endpoint = ""
        self._credentials = Credentials(
            token=config.token,
            tls_root_cert=config.tls_cert.read_bytes() if config.tls_cert else None,
            server_name=config.tls_server_name,
        )

    # ---- Cluster protocol (for RouteHandler) ----

    @property
    def data_dir(self) -> str:
        return str(self._data_dir)

    def topics(self) -> list[str]:
        return self._routes.topics()

    def layout(self, topic: str) -> Sequence[int]:
        return self._routes.layout(topic)

    def endpoint_of(self, shard: int) -> str:
        return self._slot_of(shard).process.endpoint

    def _slot_of(self, shard: int) -> _Slot:
        for slot in self._slots:
            if shard in slot.process.shards:
                return slot
        raise errors.NotFoundError(f"no shard process serves shard directory {shard}")

    def create_topic(self, topic: str, queues: int) -> Sequence[int]:
        with self._admin_lock:
            try:
                before = self._routes.layout(topic)
            except errors.NotFoundError:
                before = []
            if len(before) >= queues:
                return before
            candidates = [slot.process.index for slot in self._slots]
            layout = self._routes.grow(topic, queues, candidates)
            self._routes.save()
            log.info("topic %s: %d queues on shards %s", topic, len(layout), layout)
            self._push(topic, layout)
            return layout

    def delete_topic(self, topic: str) -> None:
        with self._admin_lock:
            self._routes.remove(topic)
            self._routes.save()
            log.info("deleted topic %s", topic)
            for slot in self._serving():
                self._call(slot, "DropTopic", pb.DropTopicRequest(topic=topic))

    def queue_offsets(self, topic: str, queue_id: int) -> tuple[int, int]:
        layout = self._routes.layout(topic)
        slot = self._slot_of(layout[queue_id])
        try:
            response = self._call(
                slot, "QueueOffsets", pb.QueueOffsetsRequest(topic=topic, queue_id=queue_id)
            )
        except errors.RmqError:
            return -1, -1
        assert isinstance(response, pb.QueueOffsetsResponse)
        return response.min_offset, response.max_offset

    def processes(self) -> list[ProcessInfo]:
        return [
            ProcessInfo(
                process=slot.process.index,
                endpoint=slot.process.endpoint,
                shards=slot.process.shards,
                pid=slot.process.pid,
                serving=slot.state is State.SERVING,
                restarts=max(slot.process.restarts, 0),
            )
            for slot in self._slots
        ]

    # ---- talking to shard processes ----

    def _serving(self) -> list[_Slot]:
        return [slot for slot in self._slots if slot.state is State.SERVING]

    def _call(self, slot: _Slot, method: str, request: Any) -> Any:
        if slot.stub is None:
            raise errors.StoreClosedError(f"shard process {slot.process.index} is not running")
        try:
            return getattr(slot.stub, method)(
                request, timeout=ADMIN_TIMEOUT, metadata=self._credentials.metadata
            )
        except grpc.RpcError as error:
            code = error.code()
            message = f"shard process {slot.process.index}: {error.details()}"
            if code is grpc.StatusCode.INVALID_ARGUMENT:
                raise errors.InvalidArgumentError(message) from error
            if code is grpc.StatusCode.NOT_FOUND:
                raise errors.NotFoundError(message) from error
            if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise errors.DiskFullError(message) from error
            if code is grpc.StatusCode.UNAVAILABLE:
                raise errors.StoreClosedError(message) from error
            raise errors.RmqError(message) from error

    def _push(self, topic: str, layout: Sequence[int]) -> None:
        """Tell every serving process about ``topic``; a process that is (re)starting reads
        routes.json itself and gets every topic again once it serves."""
        request = pb.HostTopicRequest(topic=topic)
        for queue_id, shard in enumerate(layout):
            request.queues.add(queue_id=queue_id, shard=shard)
        for slot in self._serving():
            try:
                self._call(slot, "HostTopic", request)
            except errors.StoreClosedError as error:
                log.warning("could not tell about topic %s: %s", topic, error)

    def _push_all(self, slot: _Slot) -> None:
        for topic, layout in self._routes.layouts().items():
            request = pb.HostTopicRequest(topic=topic)
            for queue_id, shard in enumerate(layout):
                request.queues.add(queue_id=queue_id, shard=shard)
            self._call(slot, "HostTopic", request)

    # ---- lifecycle ----

    def start(self) -> None:
        """Lock the data directory, check the ports, start every shard process, serve
        routes."""
        config = self.config
        if config.shard_ports is not None and len(config.shard_ports) != config.shards:
            raise StartError(
                f"{len(config.shard_ports)} shard ports given for {config.shards} shards"
            )
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        # Before any shard process starts: a taken port is named, with what to do about it.
        problem = self._ports.check()
        if problem is not None:
            raise StartError(problem)
        (self._data_dir / STATE_FILE).unlink(missing_ok=True)
        self._routes = RouteTable.load(self._data_dir / FILE_NAME)
        existing = shard_directories(self._data_dir) | self._routes.shards_in_use()
        directories = max(config.shards, max(existing, default=-1) + 1)
        if directories > config.shards:
            log.info(
                "%d shard directories exist; %d processes serve them", directories, config.shards
            )
        settings = ShardSettings(
            data_dir=self._data_dir,
            routes=self._data_dir / FILE_NAME,
            host=config.host,
            flush=config.flush,
            store_options=config.store_options,
            limits={
                name: getattr(config.limits, name) for name in config.limits.__dataclass_fields__
            },
            token=config.token,
            tls_cert=config.tls_cert,
            tls_key=config.tls_key,
            max_workers=config.max_workers,
            log_level=config.log_level,
        )
        for index, shards in enumerate(processes_for(directories, config.shards)):
            self._slots.append(
                _Slot(ShardProcess(index, shards, self._ports.shard_port(index), settings))
            )
        for slot in self._slots:
            self._spawn(slot)
        deadline = time.monotonic() + START_TIMEOUT
        while any(slot.state is not State.SERVING for slot in self._slots):
            self._tick(initial=True)
            if self._stop.is_set():
                raise StartError("stopped while starting")
            if time.monotonic() > deadline:
                raise StartError(f"shard processes did not start within {START_TIMEOUT:.0f} s")
            time.sleep(0.05)
        self._start_server()
        self._write_state()

    def _take_lock(self) -> None:
        path = self._data_dir / LOCK_FILE
        self._lock_file = open(path, "a+")  # noqa: SIM115 (held for the broker's lifetime)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            raise StartError(
                f"another rmq serve is using {self._data_dir} ({path} is locked)"
            ) from error

    def _start_server(self) -> None:
        config = self.config
        security = Security(
            token=config.token,
            tls_cert=config.tls_cert.read_bytes() if config.tls_cert else None,
            tls_key=config.tls_key.read_bytes() if config.tls_key else None,
        )
        try:
            server, port, health = build_server(
                [route_service(RouteHandler(self, config.limits))],
                host=config.host,
                port=config.port,
                security=security,
                limits=config.limits,
                max_workers=16,
            )
        except (OSError, RuntimeError) as error:
            # Taken since start() checked it (gRPC's own message names no reason).
            reason = bind_problem(config.host, config.port) or "gRPC could not bind it"
            raise StartError(self._ports.problem(None, config.port, reason)) from error
        server.start()
        self._server, self._health = server, health
        host = config.host
        self.endpoint = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        health.set("", health_pb2.HealthCheckResponse.SERVING)
        health.set(ROUTE_SERVICE, health_pb2.HealthCheckResponse.SERVING)
        self._update_shard_health()
        log.info(
            "rmq broker serving routes on %s; %d shard processes on %s",
            self.endpoint,
            len(self._slots),
            ", ".join(slot.process.endpoint for slot in self._slots),
        )

    def _update_shard_health(self) -> None:
        if self._health is not None:
            all_serving = all(slot.state is State.SERVING for slot in self._slots)
            self._health.set(
                SHARD_SERVICE,
                health_pb2.HealthCheckResponse.SERVING
                if all_serving
                else health_pb2.HealthCheckResponse.NOT_SERVING,
            )

    def _write_state(self) -> None:
        state = {
            "endpoint": self.endpoint,
            "pid": os.getpid(),
            "data_dir": str(self._data_dir),
            "processes": [
                {
                    "process": info.process,
                    "endpoint": info.endpoint,
                    "shards": list(info.shards),
                    "pid": info.pid,
                    "serving": info.serving,
                    "restarts": info.restarts,
                }
                for info in self.processes()
            ],
        }
        write_json_atomically(self._data_dir / STATE_FILE, state)

    def _spawn(self, slot: _Slot) -> None:
        slot.process.spawn()
        slot.state = State.STARTING

    def _tick(self, initial: bool = False) -> None:
        """One round of the monitor: notice ready, dead and due-to-restart processes."""
        config = self.config
        now = time.monotonic()
        changed = False
        for slot in self._slots:
            process = slot.process
            if slot.state is State.STARTING:
                if process.ready():
                    self._connect(slot)
                    try:
                        if not initial:
                            self._push_all(slot)
                    except errors.RmqError as error:
                        log.warning("shard process %d: %s", process.index, error)
                    slot.state = State.SERVING
                    changed = True
                    log.info(
                        "shard process %d (pid %d) serves on %s",
                        process.index,
                        process.pid,
                        process.endpoint,
                    )
                elif process.exit_code() is not None:
                    if initial and process.exit_code() == EXIT_CANNOT_LISTEN:
                        reason = bind_problem(config.host, process.port) or "it could not bind it"
                        raise StartError(self._ports.problem(process.index, process.port, reason))
                    if initial:
                        raise StartError(
                            f"shard process {process.index} {process.describe_exit()} while "
                            "starting; see its log above"
                        )
                    self._schedule_restart(slot, now)
                    changed = True
                elif now - process.started_at > START_TIMEOUT:
                    log.error("shard process %d did not start in time; killing it", process.index)
                    process.kill()
            elif slot.state is State.SERVING and process.exit_code() is not None:
                self._schedule_restart(slot, now)
                changed = True
            elif slot.state is State.WAITING and now >= slot.restart_at:
                log.info("restarting shard process %d", process.index)
                self._spawn(slot)
                changed = True
        if changed and not initial:
            self._update_shard_health()
            self._write_state()

    def _connect(self, slot: _Slot) -> None:
        if slot.channel is not None:
            slot.channel.close()
        slot.channel = open_channel(slot.process.endpoint, self._credentials)
        slot.stub = pb_grpc.ShardStub(slot.channel)

    def _schedule_restart(self, slot: _Slot, now: float) -> None:
        process = slot.process
        lived = now - process.started_at
        slot.backoff = MIN_BACKOFF if lived > STABLE_AFTER else min(slot.backoff * 2, MAX_BACKOFF)
        slot.restart_at = now + slot.backoff
        slot.state = State.WAITING
        log.warning(
            "shard process %d (pid %d) %s after %.1f s; restarting in %.1f s",
            process.index,
            process.pid,
            process.describe_exit(),
            lived,
            slot.backoff,
        )

    def run_until_stopped(self) -> None:
        while not self._stop.wait(0.1):
            self._tick()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Stop serving routes, then each shard process (SIGTERM, then SIGKILL)."""
        self._stop.set()
        started = self._server is not None or any(slot.process.pid for slot in self._slots)
        if self._health is not None:
            self._health.enter_graceful_shutdown()
        if self._server is not None:
            self._server.stop(grace=2).wait()
        for slot in self._slots:
            slot.process.terminate()
        for slot in self._slots:
            if not slot.process.wait(STOP_TIMEOUT):
                log.error("shard process %d did not stop in time; killing it", slot.process.index)
                slot.process.kill()
                slot.process.wait(5)
            if slot.process.pid:
                log.info("shard process %d %s", slot.process.index, slot.process.describe_exit())
            slot.state = State.STOPPED
            if slot.channel is not None:
                slot.channel.close()
        (self._data_dir / STATE_FILE).unlink(missing_ok=True)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
        if started:
            log.info("rmq broker stopped")


def serve(config: ServeConfig) -> int:
    """Run a broker until SIGTERM or SIGINT; the exit code of ``rmq serve``."""
    supervisor = Supervisor(config)
    previous = {
        signum: signal.signal(signum, lambda *_: supervisor.request_stop())
        for signum in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        try:
            supervisor.start()
        except (StartError, errors.RmqError) as error:
            log.error("%s", error)
            return 1
        supervisor.run_until_stopped()
        log.info("stop requested")
        return 0
    finally:
        supervisor.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
