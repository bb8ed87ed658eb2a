"""The S3 server the tests use (versitygw, bench/peers/s3.py), exercised for real
with boto3: what later tiered-storage tests rely on, including where an object's bytes
live on disk and what a client sees when that file is damaged or the server is down."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    FlexibleChecksumError,
    ReadTimeoutError,
)

import bench.peers.s3 as s3_server_module
from bench.peers.s3 import S3Server, S3ServerError

MIB = 1 << 20


def error_code(error: ClientError) -> tuple[str, int]:
    return error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]


def test_the_bucket_is_a_directory_under_the_root(s3_server: S3Server, s3_bucket: str) -> None:
    assert s3_server.endpoint == f"http://127.0.0.1:{s3_server.port}"
    assert s3_server.bucket_path(s3_bucket) == s3_server.root / s3_bucket
    assert s3_server.bucket_path(s3_bucket).is_dir()
    names = [bucket["Name"] for bucket in s3_server.client().list_buckets()["Buckets"]]
    assert s3_bucket in names
    assert not any(name.startswith(".") for name in names)  # not .vgwlocks


def test_put_get_range_list_delete(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    body = bytes(range(256)) * 40  # 10240 bytes
    put = client.put_object(Bucket=s3_bucket, Key="seg/0001.bin", Body=body)
    assert put["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
    client.put_object(Bucket=s3_bucket, Key="seg/0002.bin", Body=b"two")
    client.put_object(Bucket=s3_bucket, Key="index/0001.idx", Body=b"idx")

    got = client.get_object(Bucket=s3_bucket, Key="seg/0001.bin")
    assert got["Body"].read() == body
    assert got["ContentLength"] == len(body)
    assert got["ETag"] == put["ETag"]

    def ranged(spec: str) -> tuple[str, bytes, int]:
        response = client.get_object(Bucket=s3_bucket, Key="seg/0001.bin", Range=spec)
        status = response["ResponseMetadata"]["HTTPStatusCode"]
        return response["ContentRange"], response["Body"].read(), status

    assert ranged("bytes=100-199") == ("bytes 100-199/10240", body[100:200], 206)
    assert ranged("bytes=10000-") == ("bytes 10000-10239/10240", body[10000:], 206)
    assert ranged("bytes=-16") == ("bytes 10224-10239/10240", body[-16:], 206)
    # A range past the end is cut to the object; one starting past the end is refused.
    assert ranged("bytes=10200-20000") == ("bytes 10200-10239/10240", body[10200:], 206)
    with pytest.raises(ClientError) as refused:
        ranged("bytes=10240-10300")
    assert error_code(refused.value) == ("InvalidRange", 416)

    listed = client.list_objects_v2(Bucket=s3_bucket)
    assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [
        ("index/0001.idx", 3),
        ("seg/0001.bin", len(body)),
        ("seg/0002.bin", 3),
    ]
    listed = client.list_objects_v2(Bucket=s3_bucket, Prefix="seg/")
    assert [o["Key"] for o in listed["Contents"]] == ["seg/0001.bin", "seg/0002.bin"]
    listed = client.list_objects_v2(Bucket=s3_bucket, Delimiter="/")
    assert [p["Prefix"] for p in listed["CommonPrefixes"]] == ["index/", "seg/"]
    assert "Contents" not in listed
    page = client.list_objects_v2(Bucket=s3_bucket, MaxKeys=2)
    assert page["IsTruncated"] and page["KeyCount"] == 2
    rest = client.list_objects_v2(
        Bucket=s3_bucket, MaxKeys=2, ContinuationToken=page["NextContinuationToken"]
    )
    assert [o["Key"] for o in rest["Contents"]] == ["seg/0002.bin"]

    client.delete_object(Bucket=s3_bucket, Key="seg/0001.bin")
    assert not s3_server.object_path(s3_bucket, "seg/0001.bin").exists()
    with pytest.raises(ClientError) as missing:
        client.get_object(Bucket=s3_bucket, Key="seg/0001.bin")
    assert error_code(missing.value) == ("NoSuchKey", 404)
    # Deleting a key that is not there succeeds, as on S3.
    deleted = client.delete_object(Bucket=s3_bucket, Key="seg/0001.bin")
    assert deleted["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_missing_bucket_and_missing_key(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    with pytest.raises(ClientError) as no_bucket:
        client.get_object(Bucket="no-such-bucket-here", Key="k")
    assert error_code(no_bucket.value) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as no_bucket:
        client.put_object(Bucket="no-such-bucket-here", Key="k", Body=b"x")
    assert error_code(no_bucket.value) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as no_bucket:
        client.list_objects_v2(Bucket="no-such-bucket-here")
    assert error_code(no_bucket.value) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as no_key:
        client.head_object(Bucket=s3_bucket, Key="nothing")
    assert error_code(no_key.value) == ("404", 404)  # a HEAD has no error body
    with pytest.raises(ClientError) as taken:
        client.create_bucket(Bucket=s3_bucket)
    assert error_code(taken.value) == ("BucketAlreadyOwnedByYou", 409)


def test_multipart_upload(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    parts_data = [b"a" * (5 * MIB), b"b" * (5 * MIB), b"tail"]
    upload = client.create_multipart_upload(Bucket=s3_bucket, Key="big/object")
    upload_id = upload["UploadId"]
    parts = []
    for number, data in enumerate(parts_data, start=1):
        part = client.upload_part(
            Bucket=s3_bucket, Key="big/object", UploadId=upload_id, PartNumber=number, Body=data
        )
        assert part["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
        parts.append({"PartNumber": number, "ETag": part["ETag"]})
    listed = client.list_parts(Bucket=s3_bucket, Key="big/object", UploadId=upload_id)
    assert [p["Size"] for p in listed["Parts"]] == [len(d) for d in parts_data]
    uploads = client.list_multipart_uploads(Bucket=s3_bucket)["Uploads"]
    assert [u["UploadId"] for u in uploads] == [upload_id]
    # Not an object until it is completed.
    assert "Contents" not in client.list_objects_v2(Bucket=s3_bucket)

    done = client.complete_multipart_upload(
        Bucket=s3_bucket, Key="big/object", UploadId=upload_id, MultipartUpload={"Parts": parts}
    )
    digests = b"".join(hashlib.md5(data).digest() for data in parts_data)
    assert done["ETag"] == f'"{hashlib.md5(digests).hexdigest()}-3"'

    whole = b"".join(parts_data)
    head = client.head_object(Bucket=s3_bucket, Key="big/object")
    assert head["ContentLength"] == len(whole)
    assert head["ETag"] == done["ETag"]
    across = client.get_object(
        Bucket=s3_bucket, Key="big/object", Range=f"bytes={10 * MIB - 2}-{10 * MIB + 1}"
    )
    assert across["Body"].read() == b"bbta"
    assert client.get_object(Bucket=s3_bucket, Key="big/object")["Body"].read() == whole
    # One plain file on disk, the parts' staging area emptied.
    assert s3_server.object_path(s3_bucket, "big/object").stat().st_size == len(whole)
    staging = s3_server.bucket_path(s3_bucket) / ".sgwtmp" / "multipart"
    assert not staging.exists() or not any(staging.iterdir())
    assert client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


def test_multipart_parts_but_the_last_must_be_5_mib(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    upload_id = client.create_multipart_upload(Bucket=s3_bucket, Key="small")["UploadId"]
    parts = []
    for number in (1, 2):
        part = client.upload_part(
            Bucket=s3_bucket, Key="small", UploadId=upload_id, PartNumber=number, Body=b"x" * 100
        )
        parts.append({"PartNumber": number, "ETag": part["ETag"]})
    with pytest.raises(ClientError) as too_small:
        client.complete_multipart_upload(
            Bucket=s3_bucket, Key="small", UploadId=upload_id, MultipartUpload={"Parts": parts}
        )
    assert error_code(too_small.value) == ("EntityTooSmall", 400)
    client.abort_multipart_upload(Bucket=s3_bucket, Key="small", UploadId=upload_id)
    assert client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as gone:
        client.list_parts(Bucket=s3_bucket, Key="small", UploadId=upload_id)
    assert error_code(gone.value) == ("NoSuchUpload", 404)


def test_an_object_is_a_file_and_damage_to_it_shows_through_get(
    s3_server: S3Server, s3_bucket: str
) -> None:
    client = s3_server.client()
    # The client a Rust engine is like: it checks no checksum of the response.
    unchecked = s3_server.client(response_checksum_validation="when_required")
    body = b"0123456789" * 100
    put = client.put_object(Bucket=s3_bucket, Key="tier/a/segment", Body=body)
    path = s3_server.object_path(s3_bucket, "tier/a/segment")
    assert path == s3_server.root / s3_bucket / "tier" / "a" / "segment"
    assert path.read_bytes() == body

    # Truncated on disk: GET and HEAD report the file's new length and the old ETag.
    os.truncate(path, 600)
    assert client.head_object(Bucket=s3_bucket, Key="tier/a/segment")["ContentLength"] == 600
    got = unchecked.get_object(Bucket=s3_bucket, Key="tier/a/segment")
    assert (got["ContentLength"], got["ETag"]) == (600, put["ETag"])
    assert got["Body"].read() == body[:600]
    ranged = unchecked.get_object(Bucket=s3_bucket, Key="tier/a/segment", Range="bytes=590-700")
    assert ranged["ContentRange"] == "bytes 590-599/600"
    assert ranged["Body"].read() == body[590:600]
    with pytest.raises(ClientError) as past_end:
        unchecked.get_object(Bucket=s3_bucket, Key="tier/a/segment", Range="bytes=700-799")
    assert error_code(past_end.value) == ("InvalidRange", 416)
    # boto3 by default asks for the stored checksum (CRC32, which it sent with the PUT)
    # and compares it with what it read: there the damage is an error.
    with pytest.raises(FlexibleChecksumError):
        client.get_object(Bucket=s3_bucket, Key="tier/a/segment")["Body"].read()

    # Overwritten in place, same length: served as it is now, with nothing to tell.
    put = client.put_object(Bucket=s3_bucket, Key="tier/a/segment", Body=body)
    with path.open("r+b") as file:
        file.seek(500)
        file.write(b"XXXX")
    got = unchecked.get_object(Bucket=s3_bucket, Key="tier/a/segment")
    assert got["ETag"] == put["ETag"]
    assert got["Body"].read() == body[:500] + b"XXXX" + body[504:]
    middle = client.get_object(Bucket=s3_bucket, Key="tier/a/segment", Range="bytes=498-505")
    assert middle["Body"].read() == b"89XXXX45"  # a part of an object has no checksum

    # Removed on disk: the key is gone.
    path.unlink()
    with pytest.raises(ClientError) as removed:
        client.get_object(Bucket=s3_bucket, Key="tier/a/segment")
    assert error_code(removed.value) == ("NoSuchKey", 404)


def test_stop_and_start_again(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="kept", Body=b"still here")
    endpoint, pid = s3_server.endpoint, s3_server.pid
    try:
        s3_server.stop()
        assert not s3_server.running and s3_server.pid is None
        with pytest.raises(EndpointConnectionError):
            client.get_object(Bucket=s3_bucket, Key="kept")
        with pytest.raises(EndpointConnectionError):
            client.put_object(Bucket=s3_bucket, Key="new", Body=b"x")
    finally:
        s3_server.start()
    assert s3_server.endpoint == endpoint and s3_server.pid != pid
    assert client.get_object(Bucket=s3_bucket, Key="kept")["Body"].read() == b"still here"
    client.put_object(Bucket=s3_bucket, Key="new", Body=b"x")
    s3_server.start()  # already running: nothing to do
    assert s3_server.running


def test_paused_server_times_requests_out(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client(read_timeout=0.5, connect_timeout=0.5)
    client.put_object(Bucket=s3_bucket, Key="k", Body=b"v")
    s3_server.pause()
    try:
        with pytest.raises(ReadTimeoutError):
            client.get_object(Bucket=s3_bucket, Key="k")
    finally:
        s3_server.resume()
    assert client.get_object(Bucket=s3_bucket, Key="k")["Body"].read() == b"v"


def test_a_child_process_finds_the_server_through_its_environment(
    s3_server: S3Server, s3_bucket: str
) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="hello", Body=b"from the parent")
    env = s3_server.subprocess_env({"PATH": os.environ.get("PATH", ""), "AWS_PROFILE": "x"})
    assert "AWS_PROFILE" not in env
    assert env["AWS_ENDPOINT_URL"] == s3_server.endpoint
    assert env["AWS_ALLOW_HTTP"] == "true"
    script = textwrap.dedent(
        f"""
        import boto3
        body = boto3.client("s3").get_object(Bucket="{s3_bucket}", Key="hello")["Body"]
        print(body.read().decode())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from the parent"


def test_context_manager_kills_the_server_on_exit(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), S3Server(tmp_path / "s3") as server:
        assert server.running
        pid = server.pid
        assert pid is not None
        server.create_bucket("some-bucket")
        assert (tmp_path / "s3" / "root" / "some-bucket").is_dir()
        raise RuntimeError("boom")
    assert not server.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_missing_binary_names_the_install_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_server_module, "VERSITYGW", tmp_path / "no-versitygw")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(S3ServerError, match="scripts/install-test-servers"):
        S3Server(tmp_path / "s3")
