"""An S3-compatible server for the tests: moto's (the ``test`` extra installs it), in a process of its own on
127.0.0.1 and a free port, started and stopped by the tests. Credentials reach sparkberg only through FileIO
properties: :func:`properties` gives them, and :func:`no_aws_environment` hides every AWS variable and file a
client could otherwise take them from."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request

from pgserver import _free_port as free_port

ACCESS_KEY = "AKIASPARKBERGTEST"
SECRET_KEY = "sparkberg-s3-secret-do-not-leak"
REGION = "us-east-1"


class S3Server:
    """A running moto server: ``endpoint`` its URL; :meth:`bucket` makes a bucket; :meth:`stop` ends it."""

    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).read()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto's S3 server did not start (pip install 'moto[server]>=5.2.5')")
                time.sleep(0.2)

    def properties(self) -> dict[str, str]:
        """The FileIO properties that reach this server."""
        return {"s3.endpoint": self.endpoint, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY,
                "s3.region": REGION, "s3.path-style-access": "true"}

    def bucket(self, name: str) -> str:
        """Make bucket ``name`` (through the server's S3 API, as any client would); its ``s3://`` URI."""
        from pyarrow import fs
        s3 = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                             endpoint_override=f"127.0.0.1:{self.port}", allow_bucket_creation=True)
        s3.create_dir(name)
        return f"s3://{name}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION",
                 "AWS_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


@contextlib.contextmanager
def no_aws_environment(tmp: str):
    """No AWS variable, and credential and config files that do not exist: a client finds credentials only in
    what it is given."""
    saved = {k: os.environ.pop(k) for k in AWS_VARIABLES if k in os.environ}
    files = {k: os.environ.get(k) for k in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                                             "AWS_EC2_METADATA_DISABLED")}
    os.environ.update({"AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "no-credentials"),
                       "AWS_CONFIG_FILE": os.path.join(tmp, "no-config"), "AWS_EC2_METADATA_DISABLED": "true"})
    try:
        yield
    finally:
        for k, v in files.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.environ.update(saved)


@contextlib.contextmanager
def started(tmp: str):
    """A server, with no AWS variable or file around it while it runs (:func:`no_aws_environment`)."""
    with no_aws_environment(tmp):
        server = S3Server()
        try:
            yield server
        finally:
            server.stop()
