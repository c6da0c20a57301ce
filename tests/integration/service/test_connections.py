"""Redis with an ACL user and password, and Redis over TLS: real redis-server processes."""

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis as sync_redis
from redis.exceptions import AuthenticationError, ConnectionError, ResponseError

from tests.support.processes import Processes
from worker.embedded.stack import free_port
from worker.service.connections import make_redis
from worker.settings import WorkerSettings
from worker.store.protocol import Write
from worker.store.redis_store import RedisStore
from worker.systems.arena.codec import RATING_STATES

pytestmark = pytest.mark.integration


async def apply_one(settings: WorkerSettings) -> list[bool]:
    client = make_redis(settings)
    try:
        store = RedisStore(client, settings.redis_key_prefix, "t", 5, 60, codec=RATING_STATES)
        applied, _ = await store.apply([Write("g1", bytes(8), (), ())])
        return applied
    finally:
        await client.aclose()


async def test_an_acl_user_with_a_password_works_and_a_wrong_password_is_refused(
    tmp_path: Path, processes: Processes
) -> None:
    server = processes.redis(tmp_path)
    with sync_redis.Redis.from_url(server.url) as admin:
        # The worker's own user: only its key prefix, only what it runs; the default user off.
        admin.execute_command(
            "ACL",
            "SETUSER",
            "rating-worker",
            "on",
            ">worker-pw",
            "~rating:*",
            "+@read",
            "+@write",
            "+@scripting",
            "+ping",
            "+wait",
            "+info",
        )
        admin.execute_command("ACL", "SETUSER", "default", "off")
    url = f"redis://127.0.0.1:{server.port}/0"
    good = WorkerSettings(redis_url=url, redis_username="rating-worker", redis_password="worker-pw")
    assert await apply_one(good) == [True]
    wrong = WorkerSettings(redis_url=url, redis_username="rating-worker", redis_password="nope")
    with pytest.raises((AuthenticationError, ResponseError, ConnectionError)):
        await apply_one(wrong)
    nobody = WorkerSettings(redis_url=url)
    with pytest.raises((AuthenticationError, ResponseError, ConnectionError)):
        await apply_one(nobody)
    # The ACL confines the user to its prefix: another prefix is refused by Redis.
    outside = WorkerSettings(
        redis_url=url,
        redis_username="rating-worker",
        redis_password="worker-pw",
        redis_key_prefix="other:",
    )
    with pytest.raises(ResponseError, match=r"can.t access"):
        await apply_one(outside)


def make_certs(directory: Path) -> tuple[Path, Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl is not None
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\n")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca),
        "-days",
        "1",
        "-subj",
        "/CN=rating-test-ca",
    )
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    run(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "1",
        "-extfile",
        str(ext),
    )
    return ca, cert, key


async def test_redis_over_tls_with_the_ca_file(tmp_path: Path, processes: Processes) -> None:
    ca, cert, key = make_certs(tmp_path)
    binary = shutil.which("redis-server")
    assert binary is not None
    port = free_port()
    processes.popen(
        "redis-server over TLS",
        [
            binary,
            "--port",
            "0",
            "--tls-port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(tmp_path),
            "--tls-cert-file",
            str(cert),
            "--tls-key-file",
            str(key),
            "--tls-ca-cert-file",
            str(ca),
            "--tls-auth-clients",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    url = f"rediss://127.0.0.1:{port}/0"
    trusted = WorkerSettings(redis_url=url, redis_ssl_ca_file=str(ca))
    assert await apply_one(trusted) == [True]
    # Without our CA the server's certificate is not trusted: no connection.
    untrusted = WorkerSettings(redis_url=url)
    with pytest.raises(ConnectionError):
        await apply_one(untrusted)
