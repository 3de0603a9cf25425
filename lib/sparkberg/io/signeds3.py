"""S3 whose every request a REST catalog signs (the REST spec's remote signing, ``s3.remote-signing-enabled``): the
client holds no S3 credentials; it describes each request (method, URI, headers) to the catalog's signer, which
answers with the headers to send (AWS Signature Version 4 made with the catalog's own credentials), and sends
the request so. Neither ``pyarrow.fs`` nor ``obstore`` can have another party sign their requests, so this module
speaks the handful of S3 calls a FileIO needs itself, over HTTP: ``HEAD`` and ranged ``GET`` of an object, ``PUT``
(with ``If-None-Match: *`` for a create that must not overwrite), ``DELETE``, and ``ListObjectsV2``; and serves
them to ``pyarrow`` as a file system (:class:`SignedS3Handler`), so readers and writers use it as any store's.

An object is written with one ``PUT`` of the whole body (kept in memory until the stream closes), which S3 takes up
to 5 GiB: a data file is far smaller."""
from __future__ import annotations

import datetime
import hashlib
import io
import threading
import xml.etree.ElementTree as ET
from typing import Any, Callable, Iterator
from urllib.parse import quote, urlparse

import requests

from sparkberg.errors import ValidationError

# a request to the store that does not answer within this is an error (a response body may take longer)
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()

# (method, url, headers, body, region) -> (url, headers): the signer's answer for one request
Signer = Callable[[str, str, dict[str, str], bytes | None, str], tuple[str, dict[str, str]]]


class SignedS3:
    """The S3 calls of a FileIO, each signed by ``sign`` (the catalog's :class:`~sparkberg.catalog.rest.RemoteSigner`),
    against ``s3.endpoint`` (path-style unless ``s3.path-style-access=false``) or AWS's regional endpoint."""

    signed_remotely = True  # (what tells a FileIO's create to use :meth:`put` rather than obstore's)

    def __init__(self, properties: dict[str, str], sign: Signer):
        self._sign = sign
        self.region = properties.get("s3.region") or properties.get("client.region") or "us-east-1"
        endpoint = properties.get("s3.endpoint")
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._path_style = endpoint is not None and \
            str(properties.get("s3.path-style-access", "true")).lower() != "false"
        self._local = threading.local()  # (a session per thread: requests' sessions are not thread-safe)

    def __repr__(self) -> str:
        return f"SignedS3({self._endpoint or self.region})"

    def _session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
        return s

    def url(self, bucket: str, key: str = "") -> str:
        path = quote(key, safe="/~")
        if self._endpoint is None:
            return f"https://{bucket}.s3.{self.region}.amazonaws.com/{path}"
        if self._path_style:
            return f"{self._endpoint}/{bucket}/{path}"
        u = urlparse(self._endpoint)
        return f"{u.scheme}://{bucket}.{u.netloc}/{path}"

    def request(self, method: str, bucket: str, key: str = "", query: str = "", body: bytes | None = None,
                headers: dict[str, str] | None = None) -> requests.Response:
        """One signed request; its response (any status: the caller decides)."""
        url = self.url(bucket, key) + (f"?{query}" if query else "")
        wanted = {"Host": urlparse(url).netloc, **(headers or {}),
                  "x-amz-content-sha256": hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256}
        signed_url, signed = self._sign(method, url, wanted, body, self.region)
        try:
            return self._session().request(method, signed_url, headers=signed, data=body,
                                           timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))
        except requests.RequestException as e:
            raise ConnectionError(f"S3 at {urlparse(url).netloc} did not answer {method}: {type(e).__name__}") \
                from None

    def check(self, r: requests.Response, what: str, ok: tuple[int, ...] = (200,)) -> requests.Response:
        """``r``, or the error its status says (404: FileNotFoundError; 403: PermissionError naming S3's code)."""
        if r.status_code in ok:
            return r
        code = _error_code(r)
        if r.status_code == 404:
            raise FileNotFoundError(f"{what}: {code or 'NoSuchKey'}")
        if r.status_code in (401, 403):
            raise PermissionError(f"{what}: {code or 'AccessDenied'} (HTTP {r.status_code})")
        raise OSError(f"{what}: HTTP {r.status_code} {code}".rstrip())

    def head(self, bucket: str, key: str) -> tuple[int, datetime.datetime | None] | None:
        """(size, modification time) of an object; None when it does not exist."""
        r = self.request("HEAD", bucket, key)
        if r.status_code == 404:
            return None
        self.check(r, f"HEAD s3://{bucket}/{key}")
        modified = r.headers.get("Last-Modified")
        when = datetime.datetime.strptime(modified, "%a, %d %b %Y %H:%M:%S %Z").replace(
            tzinfo=datetime.timezone.utc) if modified else None
        return int(r.headers.get("Content-Length", 0)), when

    def get(self, bucket: str, key: str, start: int | None = None, length: int | None = None) -> bytes:
        """An object's bytes (``length`` of them from ``start``, when given)."""
        headers = {} if start is None else {"Range": f"bytes={start}-{start + length - 1}"}
        if length == 0:
            return b""
        r = self.request("GET", bucket, key, headers=headers)
        return self.check(r, f"GET s3://{bucket}/{key}", (200, 206)).content

    def put(self, bucket: str, key: str, body: bytes, create: bool = False) -> None:
        """Write an object; with ``create`` only if none is there (FileExistsError else)."""
        r = self.request("PUT", bucket, key, body=body, headers={"If-None-Match": "*"} if create else None)
        if create and r.status_code in (409, 412):
            raise FileExistsError(f"s3://{bucket}/{key} exists")
        self.check(r, f"PUT s3://{bucket}/{key}")

    def delete(self, bucket: str, key: str) -> None:
        self.check(self.request("DELETE", bucket, key), f"DELETE s3://{bucket}/{key}", (200, 204, 404))

    def list(self, bucket: str, prefix: str, recursive: bool) -> Iterator[tuple[str, int, datetime.datetime | None]
                                                                         | tuple[str, None, None]]:
        """(key, size, modification time) of each object under ``prefix``, and (prefix, None, None) of each
        "directory" directly under it when not ``recursive``; page after page."""
        token = None
        while True:
            params = [("list-type", "2"), ("prefix", prefix)] + ([] if recursive else [("delimiter", "/")]) + \
                ([("continuation-token", token)] if token else [])
            query = "&".join(f"{k}={quote(v, safe='-_.~')}" for k, v in sorted(params))
            r = self.check(self.request("GET", bucket, query=query), f"LIST s3://{bucket}/{prefix}")
            root = ET.fromstring(r.content)
            for c in root.iter(f"{_NS}Contents"):
                modified = c.findtext(f"{_NS}LastModified")
                when = datetime.datetime.fromisoformat(modified.replace("Z", "+00:00")) if modified else None
                yield c.findtext(f"{_NS}Key"), int(c.findtext(f"{_NS}Size") or 0), when
            for p in root.iter(f"{_NS}CommonPrefixes"):
                yield p.findtext(f"{_NS}Prefix"), None, None
            token = root.findtext(f"{_NS}NextContinuationToken")
            if root.findtext(f"{_NS}IsTruncated") != "true" or not token:
                return


def _error_code(r: requests.Response) -> str:
    """S3's error code from an error response's XML body ('' when it has none)."""
    try:
        return ET.fromstring(r.content).findtext("Code") or ""
    except ET.ParseError:
        return ""


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.lstrip("/").partition("/")
    if not bucket:
        raise ValidationError(f"an S3 path needs a bucket, got {path!r}")
    return bucket, key


class _RangeReader(io.RawIOBase):
    """A seekable reader of one object, each read a ranged GET."""

    def __init__(self, s3: SignedS3, bucket: str, key: str, size: int):
        self._s3, self._bucket, self._key, self._size, self._pos = s3, bucket, key, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = {0: offset, 1: self._pos + offset, 2: self._size + offset}[whence]
        return self._pos

    def read(self, n: int = -1) -> bytes:
        n = self._size - self._pos if n is None or n < 0 else min(n, self._size - self._pos)
        data = self._s3.get(self._bucket, self._key, self._pos, n) if n > 0 else b""
        self._pos += len(data)
        return data


class _Writer(io.RawIOBase):
    """An object written with one PUT when the stream closes."""

    def __init__(self, s3: SignedS3, bucket: str, key: str):
        self._s3, self._bucket, self._key, self._buffer = s3, bucket, key, io.BytesIO()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._buffer.write(data)

    def tell(self) -> int:
        return self._buffer.tell()

    def close(self) -> None:
        if not self.closed:
            self._s3.put(self._bucket, self._key, self._buffer.getvalue())
            super().close()


def handler(s3: SignedS3):
    """A ``pyarrow.fs.FileSystemHandler`` over ``s3`` (paths ``bucket/key``), for ``pyarrow.fs.PyFileSystem``."""
    from pyarrow import fs
    import pyarrow as pa

    class SignedS3Handler(fs.FileSystemHandler):
        def __eq__(self, other):
            return isinstance(other, SignedS3Handler) and other._s3 is self._s3

        def __ne__(self, other):
            return not self == other

        def __init__(self):
            self._s3 = s3

        def get_type_name(self):
            return "s3-remote-signed"

        def normalize_path(self, path):
            return path

        def _info(self, path):
            bucket, key = _split(path)
            found = self._s3.head(bucket, key) if key else None
            if found is not None:
                return fs.FileInfo(path, fs.FileType.File, size=found[0], mtime=found[1])
            prefix = key.rstrip("/") + "/" if key else ""
            for _ in self._s3.list(bucket, prefix, recursive=False):
                return fs.FileInfo(path, fs.FileType.Directory)
            return fs.FileInfo(path, fs.FileType.NotFound)

        def get_file_info(self, paths):
            return [self._info(p) for p in paths]

        def get_file_info_selector(self, selector):
            bucket, key = _split(selector.base_dir)
            prefix = key.rstrip("/") + "/" if key else ""
            out, dirs = [], set()
            for name, size, when in self._s3.list(bucket, prefix, selector.recursive):
                if size is None:
                    dirs.add(name.rstrip("/"))
                    continue
                out.append(fs.FileInfo(f"{bucket}/{name}", fs.FileType.File, size=size, mtime=when))
                if selector.recursive:  # (the directories a recursive listing passes through)
                    parts = name[len(prefix):].split("/")[:-1]
                    dirs.update(prefix + "/".join(parts[:k + 1]) for k in range(len(parts)))
            if not out and not dirs and not selector.allow_not_found:
                raise FileNotFoundError(f"s3://{selector.base_dir}: no such directory")
            return out + [fs.FileInfo(f"{bucket}/{d}", fs.FileType.Directory) for d in sorted(dirs)]

        def create_dir(self, path, recursive):
            pass  # (an object store has no directories)

        def delete_dir(self, path):
            self.delete_dir_contents(path, True)

        def delete_dir_contents(self, path, missing_dir_ok=False):
            bucket, key = _split(path)
            for name, size, _ in list(self._s3.list(bucket, key.rstrip("/") + "/", recursive=True)):
                if size is not None:
                    self._s3.delete(bucket, name)

        def delete_root_dir_contents(self):
            raise PermissionError("deleting every bucket's contents is not done")

        def delete_file(self, path):
            bucket, key = _split(path)
            if self._s3.head(bucket, key) is None:
                raise FileNotFoundError(f"s3://{path}")
            self._s3.delete(bucket, key)

        def move(self, src, dest):
            self.copy_file(src, dest)
            self.delete_file(src)

        def copy_file(self, src, dest):
            data = self._s3.get(*_split(src))
            self._s3.put(*_split(dest), data)

        def open_input_stream(self, path):
            return self.open_input_file(path)

        def open_input_file(self, path):
            bucket, key = _split(path)
            found = self._s3.head(bucket, key)
            if found is None:
                raise FileNotFoundError(f"s3://{path}")
            return pa.PythonFile(_RangeReader(self._s3, bucket, key, found[0]), mode="r")

        def open_output_stream(self, path, metadata):
            return pa.PythonFile(_Writer(self._s3, *_split(path)), mode="w")

        def open_append_stream(self, path, metadata):
            raise NotImplementedError("S3 objects cannot be appended to")

    return SignedS3Handler()


__all__ = ["Signer", "SignedS3", "handler"]
