"""fake-gcs-server behind a front that answers the one request of Google Cloud Storage's XML API it lacks.

fake-gcs-server serves GCS's JSON API, which pyarrow's client speaks, but neither serves the XML API's object
``PUT`` nor enforces its ``x-goog-if-generation-match`` precondition, and that ``PUT`` is how ``obstore`` makes a
conditional create (``x-goog-if-generation-match: 0``: write only if no object has the name). This front answers
that request as GCS documents it (https://cloud.google.com/storage/docs/xml-api/put-object-upload): the object
is written only when its current generation (0: none) matches, else ``412 Precondition Failed``; the object is
stored in fake-gcs-server through its JSON API, so every other client sees it. Every other request goes to
fake-gcs-server unchanged.

Run as ``python gcsfront.py <port> <fake-gcs-server binary>``: it starts fake-gcs-server on a port of its own and
stops it when terminated."""
from __future__ import annotations

import http.client
import http.server
import json
import signal
import subprocess
import sys
import threading
import urllib.parse

from pgserver import _free_port as free_port

_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class Front(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    backend_port = 0
    creates = threading.Lock()  # (one conditional PUT at a time: the check and the write are one step)
    local = threading.local()

    def log_message(self, *args) -> None:  # (quiet, as the server it fronts)
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self, method: str, path: str, body: bytes | None, headers: dict[str, str]):
        """(status, headers, body) of fake-gcs-server's answer; one connection per thread, kept open."""
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.backend_port, timeout=60)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.getheaders(), response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _answer(self, status: int, headers, body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self) -> None:
        body = self._body() if self.command in ("POST", "PUT", "PATCH", "DELETE") else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        self._answer(*self._backend(self.command, self.path, body, headers))

    def _xml_put(self, bucket: str, key: str) -> None:
        body = self._body()
        wanted = self.headers.get("x-goog-if-generation-match")
        auth = {"Authorization": self.headers.get("Authorization", "")}
        with self.creates:
            if wanted is not None:
                status, _, found = self._backend(
                    "GET", f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(key, safe='')}", None, auth)
                generation = json.loads(found)["generation"] if status == 200 else "0"
                if str(generation) != wanted:
                    error = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>ConditionNotMet</Code>"
                             b"<Message>At least one of the pre-conditions you specified did not hold.</Message>"
                             b"</Error>")
                    self._answer(412, [("Content-Type", "application/xml")], error)
                    return
            query = urllib.parse.urlencode({"uploadType": "media", "name": key})
            status, headers, answer = self._backend(
                "POST", f"/upload/storage/v1/b/{bucket}/o?{query}", body,
                {**auth, "Content-Type": self.headers.get("Content-Type", "application/octet-stream")})
        if status != 200:
            self._answer(status, headers, answer)
            return
        made = json.loads(answer)
        self._answer(200, [("ETag", f'"{made.get("etag", made["generation"])}"'),
                           ("x-goog-generation", str(made["generation"]))], b"")

    def _route(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        if self.command == "PUT" and not path.startswith(("/storage/", "/upload/", "/download/")):
            bucket, _, key = path.lstrip("/").partition("/")
            if key:
                self._xml_put(urllib.parse.unquote(bucket), urllib.parse.unquote(key))
                return
        self._forward()

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _route


def main(port: int, binary: str) -> None:
    Front.backend_port = free_port()
    backend = subprocess.Popen([binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(Front.backend_port),
                                "-backend", "memory", "-external-url", f"http://127.0.0.1:{port}",
                                "-log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(*_):
        backend.terminate()
        backend.wait(timeout=10)
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Front)
    server.daemon_threads = True
    try:
        server.serve_forever()
    finally:
        stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
