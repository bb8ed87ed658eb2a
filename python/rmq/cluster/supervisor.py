"""The supervisor: starts the shard processes, restarts one that dies, and stops
everything cleanly; once every shard process serves, it serves the Route service.

``rmq serve`` builds a :class:`rmq.cluster.config.ServeConfig` and calls :func:`serve`.
The supervisor holds ``DIR/supervisor.lock`` so that two brokers never share a data
directory, loads the queue assignment from ``DIR/routes.json`` (see
:mod:`rmq.cluster.routes`) and describes the running broker in ``DIR/serve.json``
(endpoints and pids) while it runs.

What it serves itself (routes and topic admin, the RocketMQ v2 access point, metrics) is
:mod:`rmq.cluster.front_doors`; its own calls to its shard processes (host or drop a
topic, a queue's offsets) are :mod:`rmq.cluster.shard_admin`.
"""

from __future__ import annotations

import enum
import fcntl
import logging
import os
import signal
import threading
import time
from typing import IO

from rmq import errors
from rmq._rmqcore import PendingCall
from rmq.broker.route_handler import ProcessInfo
from rmq.client.credentials import Credentials
from rmq.cluster.config import ServeConfig
from rmq.cluster.files import write_json_atomically
from rmq.cluster.front_doors import FrontDoors, StartError
from rmq.cluster.metrics import ShardEndpoint
from rmq.cluster.ports import Plan, bind_problem
from rmq.cluster.process import ShardProcess, ShardSettings
from rmq.cluster.protocol import EXIT_CANNOT_LISTEN
from rmq.cluster.routes import FILE_NAME, RouteTable, processes_for, shard_directories
from rmq.cluster.shard_admin import ShardAdmin

log = logging.getLogger("rmq.supervisor")

STATE_FILE = "serve.json"
LOCK_FILE = "supervisor.lock"
START_TIMEOUT = 300.0
STOP_TIMEOUT = 20.0
# A process that dies sooner than this after starting waits longer before the next try.
STABLE_AFTER = 10.0
MIN_BACKOFF = 0.2
MAX_BACKOFF = 10.0
# How often a serving shard process is asked whether it serves (the gRPC health check),
# how long its answer may take, and how many probes in a row may go unanswered before it
# is killed (and restarted like one that died). Generous: a shard busy on a loaded
# machine is slow, not dead, and the check waits for one of the shard's gRPC workers,
# which RocketMQ v2 long-polling receives hold up to 30 s each (rocketmq.shard_backend):
# about 36 s without any answer is needed. One stopped, deadlocked or wedged answers
# nothing.
PROBE_INTERVAL = 2.0
PROBE_TIMEOUT = 10.0
UNANSWERED_PROBES = 3
# How often the monitor looks at its processes, and how long a stop waits for a round of
# it to finish (it may be waiting on a shard's answer) before stopping the processes.
TICK = 0.1
MONITOR_STOP_WAIT = 2.0


class State(enum.Enum):
    STARTING = "starting"
    SERVING = "serving"
    WAITING = "waiting to restart"
    STOPPED = "stopped"


class _Slot:
    """One shard process and what the monitor knows about it."""

    def __init__(self, process: ShardProcess) -> None:
        self.process = process
        self.state = State.STOPPED
        self.restart_at = 0.0
        self.backoff = MIN_BACKOFF
        self.probe: PendingCall | None = None
        self.probe_at = 0.0
        self.unanswered = 0


class Supervisor:
    """Runs the shard processes and, once they serve, the Route service. The monitor
    thread (the caller of ``start`` while starting, then its own thread) is the only one
    that starts processes; ``stop`` stops them. The thread that called
    ``run_until_stopped`` only waits for a stop request, so that one is honoured at once
    whatever the monitor is waiting for."""

    def __init__(self, config: ServeConfig) -> None:
        if config.shards < 1:
            raise StartError(f"--shards is {config.shards}; at least one shard is needed")
        self.config = config
        self._data_dir = config.data_dir.resolve()
        self._stop = threading.Event()
        # Held while a process is spawned: once ``stop`` took it, none is spawned again.
        self._spawning = threading.Lock()
        self._monitor: threading.Thread | None = None
        self._lock_file: IO[str] | None = None
        self._slots: list[_Slot] = []
        self._routes = RouteTable(self._data_dir / FILE_NAME)
        self._ports = Plan(config.host, config.port, config.shards, config.shard_ports)
        self._admin = ShardAdmin(
            Credentials(
                token=config.token,
                tls_root_cert=config.tls_cert.read_bytes() if config.tls_cert else None,
                server_name=config.tls_server_name,
            )
        )
        self._doors = FrontDoors(config)

    def processes(self) -> list[ProcessInfo]:
        """Each shard process: where it listens, its shard directories, whether it serves."""
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

    def metrics_endpoints(self) -> list[ShardEndpoint]:
        """Each shard process as the metrics endpoint sees it (called on each scrape)."""
        return [
            ShardEndpoint(
                process=slot.process.index,
                shards=slot.process.shards,
                serving=slot.state is State.SERVING,
                restarts=max(slot.process.restarts, 0),
                metrics_port=slot.process.metrics_port,
            )
            for slot in list(self._slots)
        ]

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
        broker_ports = [config.port, *(self._ports.shard_port(i) for i in range(config.shards))]
        problem = self._ports.check() or self._doors.metrics_port_problem(broker_ports)
        if problem is not None:
            raise StartError(problem)
        # Bound before the shard processes start: each binds a port the system picks for
        # its own metrics, which could be this one if it were still free.
        self._doors.serve_metrics(self.metrics_endpoints)
        (self._data_dir / STATE_FILE).unlink(missing_ok=True)
        self._routes = RouteTable.load(self._data_dir / FILE_NAME)
        existing = shard_directories(self._data_dir) | self._routes.shards_in_use()
        directories = max(config.shards, max(existing, default=-1) + 1)
        if directories > config.shards:
            log.info(
                "%d shard directories exist; %d processes serve them", directories, config.shards
            )
        # Bound before the shard processes start: they are told where routes are.
        self._doors.listen(
            lambda reason: self._ports.problem(None, config.port, reason),
            self._routes,
            self._admin,
            self.processes,
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
            metrics=config.metrics_port is not None,
            supervisor=self._doors.endpoint,
            tls_server_name=config.tls_server_name,
            rocketmq_policy=config.rocketmq_policy if config.rocketmq_port is not None else None,
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
        self._doors.serve(shards_serving=self._all_serving())
        log.info(
            "rmq broker serving routes on %s%s; %d shard processes on %s",
            self._doors.endpoint,
            f", RocketMQ clients on {self.rocketmq_endpoint}" if self.rocketmq_endpoint else "",
            len(self._slots),
            ", ".join(slot.process.endpoint for slot in self._slots),
        )
        self._write_state()

    @property
    def endpoint(self) -> str:
        """The Route service's address (bound once ``start`` began)."""
        return self._doors.endpoint

    @property
    def rocketmq_endpoint(self) -> str | None:
        return self._doors.rocketmq_endpoint

    @property
    def metrics_url(self) -> str | None:
        return self._doors.metrics_url

    def _take_lock(self) -> None:
        path = self._data_dir / LOCK_FILE
        self._lock_file = open(path, "a+")  # noqa: SIM115 (held for the broker's lifetime)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            raise StartError(
                f"another rmq serve is using {self._data_dir} ({path} is locked)"
            ) from error

    def _all_serving(self) -> bool:
        return all(slot.state is State.SERVING for slot in self._slots)

    def _update_shard_health(self) -> None:
        self._doors.set_shards_serving(self._all_serving())

    def _write_state(self) -> None:
        state = {
            "endpoint": self.endpoint,
            "pid": os.getpid(),
            "data_dir": str(self._data_dir),
            "metrics": self.metrics_url,
            "rocketmq": self.rocketmq_endpoint,
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
        with self._spawning:
            if self._stop.is_set():
                return
            slot.process.spawn()
            slot.state = State.STARTING
            slot.probe = None
            slot.unanswered = 0

    def _tick(self, initial: bool = False) -> None:
        """One round of the monitor: notice ready, dead and due-to-restart processes."""
        config = self.config
        now = time.monotonic()
        changed = False
        for slot in self._slots:
            process = slot.process
            if slot.state is State.STARTING:
                if process.ready():
                    self._admin.connect(process.index, process.endpoint)
                    try:
                        if not initial:
                            self._admin.host_all(process.index, self._routes.layouts())
                    except errors.RmqError as error:
                        log.warning("shard process %d: %s", process.index, error)
                    slot.state = State.SERVING
                    slot.probe_at = time.monotonic() + PROBE_INTERVAL
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
                    if initial and process.exit_reason():
                        raise StartError(f"shard process {process.index}: {process.failure}")
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
            elif slot.state is State.SERVING:
                self._probe(slot, now)
            elif slot.state is State.WAITING and now >= slot.restart_at:
                log.info("restarting shard process %d", process.index)
                self._spawn(slot)
                changed = True
        if changed and not initial:
            self._update_shard_health()
            self._write_state()

    def _probe(self, slot: _Slot, now: float) -> None:
        """Ask a serving process whether it serves, without waiting for the answer: it is
        read on a later round. One that leaves ``UNANSWERED_PROBES`` probes in a row
        unanswered is killed; the next round restarts it as one that died."""
        if slot.probe is None:
            if now >= slot.probe_at:
                try:
                    slot.probe = self._admin.probe(slot.process.index, PROBE_TIMEOUT)
                except errors.RmqError as error:
                    log.warning("shard process %d: %s", slot.process.index, error)
                    slot.probe_at = now + PROBE_INTERVAL
            return
        if not slot.probe.done():
            return
        call, slot.probe = slot.probe, None
        slot.probe_at = now + PROBE_INTERVAL
        try:
            call.result()
        except errors.RmqError as error:
            slot.unanswered += 1
            log.warning(
                "shard process %d (pid %d) did not answer its health check (%d of %d): %s",
                slot.process.index,
                slot.process.pid,
                slot.unanswered,
                UNANSWERED_PROBES,
                error,
            )
            if slot.unanswered >= UNANSWERED_PROBES:
                log.error(
                    "shard process %d (pid %d) did not answer %d health checks in a row; "
                    "killing it",
                    slot.process.index,
                    slot.process.pid,
                    slot.unanswered,
                )
                slot.process.kill()
        else:
            slot.unanswered = 0

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
        """Supervise from the monitor thread until a stop is requested; this thread only
        waits for that (a signal handler runs on it)."""
        # A daemon: one stuck in a call that never returns does not keep the process alive.
        self._monitor = threading.Thread(target=self._monitor_loop, name="rmq-monitor", daemon=True)
        self._monitor.start()
        while not self._stop.wait(TICK):
            pass

    def _monitor_loop(self) -> None:
        while not self._stop.wait(TICK):
            try:
                self._tick()
            except Exception:
                log.exception("supervising the shard processes failed; trying again")

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Stop serving routes, then each shard process (SIGTERM, then SIGKILL)."""
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(MONITOR_STOP_WAIT)
            if self._monitor.is_alive():
                log.warning("the monitor is still waiting on a shard process; stopping anyway")
        # A spawn under way ends before the processes are stopped; none starts after.
        if self._spawning.acquire(timeout=MONITOR_STOP_WAIT):
            self._spawning.release()
        else:
            log.warning("a shard process is still being started; stopping anyway")
        started = self._doors.bound or any(slot.process.pid for slot in self._slots)
        self._doors.stop()
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
            self._admin.disconnect(slot.process.index)
        self._admin.close()
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
