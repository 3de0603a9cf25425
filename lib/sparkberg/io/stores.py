"""Object stores configured by Iceberg's FileIO properties, one place for every scheme.

A location's scheme names its store: ``s3``, ``s3a`` and ``s3n`` are one store, S3 or an S3-compatible one (Iceberg
Java's S3FileIO takes all three, and Hadoop's connectors write the last two); ``gs`` is Google Cloud Storage;
``abfs``, ``abfss``, ``wasb`` and ``wasbs`` are Azure's (Data Lake Storage and Blob Storage); ``hdfs`` and
``viewfs`` are HDFS. Each store is configured by the property names Iceberg Java and PyIceberg use, given by the
catalog, overridden by the table's, overridden by what a catalog vends for the table:

- S3: ``s3.endpoint``, ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``, ``s3.region`` (else
  ``client.region``), ``s3.path-style-access``, ``s3.connect-timeout`` / ``s3.request-timeout`` (seconds);
  ``s3.remote-signing-enabled`` (every request signed by the table's REST catalog: :mod:`sparkberg.io.signeds3`);
- GCS: ``gcs.project-id``, ``gcs.oauth2.token`` (with ``gcs.oauth2.token-expires-at``, epoch millis),
  ``gcs.service.host`` (an emulator's or a private endpoint, ``http://host:port``);
- Azure: ``adls.account-name``, ``adls.account-key``, ``adls.sas-token.<account>``,
  ``adls.connection-string.<account>`` (its ``BlobEndpoint`` names an emulator's endpoint);

and with none of its credentials given, the provider's default chain (environment, profile, instance role) as
the provider's own SDK finds it. Reads, writes, listing and deletes go through ``pyarrow.fs``, whose native
clients read Parquet without a copy; a create that must not overwrite goes through ``obstore`` (the Rust
``object_store`` crate), which sends the store's conditional create (S3 ``If-None-Match: *``, GCS
``ifGenerationMatch=0``, Azure ``If-None-Match: *``), which ``pyarrow.fs`` cannot.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from sparkberg.errors import ValidationError

S3, GCS, AZURE, HDFS, LOCAL = "s3", "gcs", "azure", "hdfs", "local"
STORES = {"s3": S3, "s3a": S3, "s3n": S3, "gs": GCS, "gcs": GCS, "abfs": AZURE, "abfss": AZURE, "wasb": AZURE,
          "wasbs": AZURE, "hdfs": HDFS, "viewfs": HDFS, "file": LOCAL}
# the property prefixes that configure a FileIO (any other property is not the FileIO's)
PREFIXES = ("s3.", "client.", "gcs.", "adls.", "hdfs.")
# S3's connect and request timeouts unless the properties say: a store that does not answer is an error within
# seconds (the SDK's default waits minutes), and a request may take long for a large object
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 60.0
# how long before vended credentials expire a FileIO fetches new ones (Iceberg Java's vended credentials providers
# renew five minutes ahead), and how soon after a renewal it may renew again (a server that vends credentials
# already close to expiry is not asked on every request)
RENEW_AHEAD_S = 300.0
RENEW_MIN_INTERVAL_S = 30.0
# the properties that say when vended credentials expire (epoch millis; Azure's per account)
EXPIRY_KEYS = ("s3.session-token-expires-at-ms", "gcs.oauth2.token-expires-at")
EXPIRY_PREFIXES = ("adls.sas-token-expires-at-ms.",)
# how long GCS's client retries a failing request before it gives up (pyarrow's default is 15 minutes, so an
# endpoint that does not answer would hang a job that long; a transient error clears well within this)
GCS_RETRY_LIMIT_S = 10.0


def store_of(location: str) -> str:
    """The store a location names (:data:`STORES`; ``local`` for a plain path); an unknown scheme is a named
    error."""
    if "://" not in location:
        return LOCAL
    scheme = location.split("://", 1)[0].lower()
    store = STORES.get(scheme)
    if store is None:
        raise ValidationError(f"location {location!r}: no FileIO serves scheme {scheme!r} (sparkberg reads "
                              f"{', '.join(sorted(STORES))})")
    return store


def fileio_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """The properties of ``properties`` that configure a FileIO (:data:`PREFIXES`)."""
    return {k: str(v) for k, v in (properties or {}).items() if k.startswith(PREFIXES) and v is not None}


def expires_at_ms(properties: dict[str, str]) -> int | None:
    """When the first of the credentials in ``properties`` expires (epoch millis), None when none says."""
    found = [v for k, v in properties.items() if k in EXPIRY_KEYS or k.startswith(EXPIRY_PREFIXES)]
    try:
        return min(int(v) for v in found) if found else None
    except ValueError:
        raise ValidationError(f"FileIO credential expiry must be epoch milliseconds, got {found!r}") from None


@dataclass(frozen=True)
class Where:
    """A location within its store: the store, the authority that selects a client (an S3 bucket's store is
    the same for all buckets; an Azure account has its own), and the path a ``pyarrow.fs`` client takes."""

    store: str
    authority: str
    path: str
    bucket: str
    key: str


def where(location: str) -> Where:
    """Where ``location`` (an object store's or HDFS's URI) is."""
    store = store_of(location)
    u = urlparse(location)
    if store == AZURE:
        # abfs[s]://container@account.dfs.core.windows.net/path (wasb[s]: ...blob.core.windows.net)
        container, _, host = u.netloc.partition("@")
        account = host.split(".", 1)[0]
        key = u.path.lstrip("/")
        return Where(store, account, f"{container}/{key}", container, key)
    if store == HDFS:
        return Where(store, u.netloc, u.path, u.netloc, u.path.lstrip("/"))
    key = u.path.lstrip("/")
    return Where(store, "", f"{u.netloc}/{key}", u.netloc, key)


def _flag(properties: dict[str, str], key: str) -> bool | None:
    value = properties.get(key)
    if value is None:
        return None
    if value.strip().lower() not in ("true", "false"):
        raise ValidationError(f"FileIO property {key} must be true or false, got {value!r}")
    return value.strip().lower() == "true"


def _seconds(properties: dict[str, str], key: str, default: float) -> float:
    value = properties.get(key)
    try:
        return default if value is None else float(value)
    except ValueError:
        raise ValidationError(f"FileIO property {key} must be a number of seconds, got {value!r}") from None


def _endpoint(url: str, key: str) -> tuple[str, str]:
    """(scheme, host[:port]) of an endpoint property's URL."""
    u = urlparse(url if "://" in url else f"https://{url}")
    if not u.netloc:
        raise ValidationError(f"FileIO property {key} must be an endpoint URL (http://host:port), got {url!r}")
    return u.scheme or "https", u.netloc


def _connection_string(properties: dict[str, str], account: str) -> dict[str, str]:
    """The ``key=value`` parts of an account's ``adls.connection-string.<account>`` ({} when none)."""
    text = properties.get(f"adls.connection-string.{account}") or ""
    return dict(p.split("=", 1) for p in text.split(";") if "=" in p)


def _azure_endpoint(properties: dict[str, str], account: str) -> tuple[str, str] | None:
    """(scheme, host[:port]) of an account's blob endpoint from its connection string, None for Azure's own (an
    emulator's endpoint names the account in its path, which pyarrow's client adds itself)."""
    endpoint = _connection_string(properties, account).get("BlobEndpoint")
    if endpoint is None:
        return None
    u = urlparse(endpoint)
    return u.scheme or "https", u.netloc


def _azure_key(properties: dict[str, str], account: str) -> str | None:
    """An account's key: its connection string's, else ``adls.account-key``."""
    return _connection_string(properties, account).get("AccountKey") or properties.get("adls.account-key")


@dataclass(frozen=True)
class _S3:
    """An S3 client's settings from the properties, for either library's client."""

    region: str | None
    access_key: str | None
    secret_key: str | None
    session_token: str | None
    endpoint: tuple[str, str] | None  # (scheme, host[:port])
    path_style: bool | None

    @classmethod
    def of(cls, properties: dict[str, str]) -> "_S3":
        endpoint = properties.get("s3.endpoint")
        return cls(properties.get("s3.region") or properties.get("client.region"),
                   properties.get("s3.access-key-id"), properties.get("s3.secret-access-key"),
                   properties.get("s3.session-token"), _endpoint(endpoint, "s3.endpoint") if endpoint else None,
                   _flag(properties, "s3.path-style-access"))


def remote_signing(properties: dict[str, str], at: Where, signer: Any) -> Any:
    """The :class:`~sparkberg.io.signeds3.SignedS3` of an S3 location whose requests the table's catalog signs
    (``s3.remote-signing-enabled``, with the catalog's ``signer``); None for any other."""
    if at.store != S3 or not _flag(properties, "s3.remote-signing-enabled"):
        return None
    if signer is None:
        raise ValidationError("s3.remote-signing-enabled: S3 requests are to be signed by the table's REST catalog, "
                              "and this FileIO has no catalog's signer (load the table through its REST catalog)")
    from sparkberg.io.signeds3 import SignedS3  # (only for a store whose catalog signs)
    return SignedS3(properties, signer)


def pyarrow_filesystem(properties: dict[str, str], at: Where, location: str, signer: Any = None):
    """The ``pyarrow.fs`` client of the store ``at`` names, configured by ``properties`` (``signer``: the
    catalog's, for S3 with remote signing)."""
    from pyarrow import fs
    signed = remote_signing(properties, at, signer)
    if signed is not None:
        from sparkberg.io.signeds3 import handler  # (only for a store whose catalog signs)
        return fs.PyFileSystem(handler(signed))
    if at.store == S3:
        c = _S3.of(properties)
        kwargs: dict[str, Any] = {
            "region": c.region, "access_key": c.access_key, "secret_key": c.secret_key,
            "session_token": c.session_token,
            "connect_timeout": _seconds(properties, "s3.connect-timeout", CONNECT_TIMEOUT_S),
            "request_timeout": _seconds(properties, "s3.request-timeout", REQUEST_TIMEOUT_S),
        }
        if c.endpoint:
            kwargs["scheme"], kwargs["endpoint_override"] = c.endpoint
            # (with an endpoint, pyarrow addresses buckets by path unless told to use virtual hosts)
            kwargs["force_virtual_addressing"] = c.path_style is False
        return fs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})
    if at.store == GCS:
        kwargs = {"project_id": properties.get("gcs.project-id"),
                  "retry_time_limit": datetime.timedelta(seconds=GCS_RETRY_LIMIT_S)}
        token = properties.get("gcs.oauth2.token")
        if token:
            expires = properties.get("gcs.oauth2.token-expires-at")
            kwargs["access_token"] = token
            kwargs["credential_token_expiration"] = datetime.datetime.fromtimestamp(
                int(expires) / 1000, datetime.timezone.utc) if expires else \
                datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        host = properties.get("gcs.service.host")
        if host:
            kwargs["scheme"], kwargs["endpoint_override"] = _endpoint(host, "gcs.service.host")
        return fs.GcsFileSystem(**{k: v for k, v in kwargs.items() if v is not None})
    if at.store == AZURE:
        account = properties.get("adls.account-name") or at.authority
        kwargs = {"account_name": account, "account_key": _azure_key(properties, account),
                  "sas_token": properties.get(f"adls.sas-token.{account}")}
        endpoint = _azure_endpoint(properties, account)
        if endpoint is not None:
            kwargs["blob_storage_scheme"], kwargs["blob_storage_authority"] = endpoint
            kwargs["dfs_storage_scheme"], kwargs["dfs_storage_authority"] = endpoint
        return fs.AzureFileSystem(**{k: v for k, v in kwargs.items() if v is not None})
    if at.store == HDFS:
        return fs.FileSystem.from_uri(location)[0]
    raise ValidationError(f"no object store client for {location!r}")


def obstore_store(properties: dict[str, str], at: Where, signer: Any = None):
    """The ``obstore`` client of the bucket (container) ``at`` names, for conditional creates; None for a store
    without one (HDFS); for S3 with remote signing, the :class:`~sparkberg.io.signeds3.SignedS3` client."""
    signed = remote_signing(properties, at, signer)
    if signed is not None:
        return signed
    import obstore.store as stores  # (only where a commit creates a file on an object store)
    if at.store == S3:
        c = _S3.of(properties)
        config: dict[str, Any] = {"region": c.region or "us-east-1", "access_key_id": c.access_key,
                                  "secret_access_key": c.secret_key, "token": c.session_token}
        if c.endpoint:
            config["endpoint"] = f"{c.endpoint[0]}://{c.endpoint[1]}"
            config["virtual_hosted_style_request"] = c.path_style is False
        return stores.S3Store(at.bucket, config={k: v for k, v in config.items() if v is not None},
                              client_options={"allow_http": True, "connect_timeout": f"{CONNECT_TIMEOUT_S}s"})
    if at.store == GCS:
        config = {}
        host = properties.get("gcs.service.host")
        if host:
            scheme, authority = _endpoint(host, "gcs.service.host")
            config["base_url"] = f"{scheme}://{authority}"
        token = properties.get("gcs.oauth2.token")
        provider = (lambda: {"token": token, "expires_at": None}) if token else None
        return stores.GCSStore(at.bucket, config=config or None, client_options={"allow_http": True},
                               credential_provider=provider)
    if at.store == AZURE:
        account = properties.get("adls.account-name") or at.authority
        config = {"account_name": account}
        key = _azure_key(properties, account)
        if key:
            config["account_key"] = key
        sas = properties.get(f"adls.sas-token.{account}")
        if sas:
            config["sas_key"] = sas.lstrip("?")
        endpoint = _connection_string(properties, account).get("BlobEndpoint")
        if endpoint is not None:
            # (the endpoint as given, an emulator's with its account in the path; not object_store's
            # use_emulator, which ignores it for its own default of port 10000)
            config["endpoint"] = endpoint.rstrip("/")
        return stores.AzureStore(at.bucket, config=config, client_options={"allow_http": True})
    return None
