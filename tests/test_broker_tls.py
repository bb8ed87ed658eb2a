"""TLS on every port of the broker, with a certificate made for the test by openssl. The
shards' native data plane ends TLS itself: sends and pulls over TLS never reach Python."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from rmq.client import BrokerUnavailableError, Client

from tests.support.brokers import Brokers
from tests.support.certificates import self_signed_certificate
from tests.support.cli import rmq_cli
from tests.support.native_requests import native_requests


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path, "broker")


def test_clients_reach_a_tls_broker_only_over_tls(
    brokers: Brokers, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    args = ["--tls-cert", str(cert), "--tls-key", str(key), "--token", "t0k"]
    broker = brokers.start(shards=2, args=args)
    with Client(broker.endpoint, tls_root_cert=cert, token="t0k") as client:
        client.create_topic("secure", queues=4)
        with client.producer() as producer:
            result = producer.send_sync("secure", b"over tls")
        with client.consumer("g", "secure") as consumer:
            got = consumer.poll(timeout=5.0)
        assert [m.body for m in got] == [b"over tls"]
        assert client.get_by_msg_id(result.msg_id).body == b"over tls"
    answered = native_requests(broker)
    assert answered.get(("/rmq.v1.Shard/SendBatches", "answered"), 0) >= 1, answered
    assert answered.get(("/rmq.v1.Shard/Pull", "answered"), 0) >= 1, answered
    plain = Client(broker.endpoint, retry_timeout=0.5, timeout=2)
    with pytest.raises(BrokerUnavailableError):
        plain.topics()
    plain.close()
    assert grpc.StatusCode.UNAVAILABLE is BrokerUnavailableError.code


def test_a_certificate_that_is_not_one_stops_serve_at_once(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    for tls in ([garbage, key], [cert, garbage], [cert, tmp_path / "missing.pem"]):
        args = ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        done = rmq_cli("serve", "--data", str(tmp_path / "data"), "--port", "0", *args, check=False)
        assert done.returncode == 2, done.stderr
        assert (b"not a PEM certificate chain" in done.stderr) or (b"no such file" in done.stderr)
    assert not (tmp_path / "data").exists()
