"""A PostgreSQL server for the tests: Debian's ``postgresql`` package (installed by ``make test``), a cluster of
its own in a temporary directory, listening on 127.0.0.1 only, with password authentication, started and stopped
by the tests. Run as root (CI), the server runs as the ``postgres`` user, as PostgreSQL requires."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

PASSWORD = "sparkberg-test"


def _binaries() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL's server is not installed: `make test` installs Debian's postgresql package "
                           "(apt-get install postgresql)")
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """A running cluster; :meth:`uri` of a database in it; :meth:`stop` ends it and removes its files."""

    def __init__(self):
        self.bin = _binaries()
        self.root = tempfile.mkdtemp(prefix="sparkberg-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        pwfile = os.path.join(self.root, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD)
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "scram-sha-256", f"--pwfile={pwfile}",
                  "-E", "UTF8", "--no-instructions")
        self._run("pg_ctl", "-D", self.data, "-w", "-t", "60", "-l", os.path.join(self.root, "log"), "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        self.databases: set[str] = set()

    def _run(self, tool: str, *args: str) -> None:
        out = subprocess.run(self.as_user + [os.path.join(self.bin, tool), *args], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{tool} failed: {out.stdout}{out.stderr}")

    def uri(self, database: str = "iceberg", password: bool = True) -> str:
        """``postgresql://`` URI of ``database`` (created on first use)."""
        if database not in self.databases:
            import psycopg
            with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{database}"')
            self.databases.add(database)
        auth = f"postgres:{PASSWORD}" if password else "postgres"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def started() -> PostgresServer:
    """A new server, waiting until it accepts connections."""
    server = PostgresServer()
    server.databases.add("postgres")
    deadline = time.time() + 30
    while True:
        try:
            import psycopg
            psycopg.connect(server.uri("postgres"), connect_timeout=2).close()
            return server
        except Exception:  # noqa: BLE001 - starting up
            if time.time() > deadline:
                server.stop()
                raise
            time.sleep(0.2)
