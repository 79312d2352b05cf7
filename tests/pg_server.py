"""A throwaway PostgreSQL server for the tests: initdb into a temporary directory, a
loopback port and a unix socket there, stopped (and its directory removed) by the caller.

PostgreSQL refuses to run as root, so under root the data directory is given to an
unprivileged user (``nobody``) and the server runs as that user. The binaries are found
on PATH, else under ``/usr/lib/postgresql/<version>/bin`` (Debian) or
``/usr/local/pgsql/bin``; ``scripts/ensure_postgres.sh`` (run by ``make test``) installs
Debian's ``postgresql`` package when none is found.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SEARCH = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/usr/pgsql-*/bin")


def find_bin(name: str) -> str | None:
    """The path of the PostgreSQL program ``name``, or None."""
    found = shutil.which(name)
    if found:
        return found
    for pattern in SEARCH:
        for directory in sorted(Path("/").glob(pattern.lstrip("/")), reverse=True):
            if (directory / name).is_file():
                return str(directory / name)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One server: :meth:`start`, :meth:`stop` (or :meth:`kill`), :meth:`restart`,
    :meth:`close` (stop and remove the data). :attr:`url` connects as superuser
    ``postgres`` (trust authentication) over the loopback port."""

    def __init__(self) -> None:
        initdb, postgres = find_bin("initdb"), find_bin("postgres")
        if initdb is None or postgres is None:
            raise RuntimeError("no PostgreSQL server binaries (run scripts/ensure_postgres.sh)")
        self._postgres = postgres
        self.dir = Path(tempfile.mkdtemp(prefix="dagctx-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._user: str | None = None
        if os.geteuid() == 0:
            self._user = "nobody"
            entry = pwd.getpwnam(self._user)
            os.chmod(self.dir, 0o755)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._proc: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--no-sync", "--no-instructions"],
            check=True, capture_output=True, user=self._user, cwd=self.dir,
        )  # fmt: skip

    def start(self) -> None:
        """Start the server and wait until it accepts connections (up to 30 s)."""
        log = open(self.dir / "server.log", "ab")  # noqa: SIM115 - the child keeps it
        self._proc = subprocess.Popen(
            [self._postgres, "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}",
             "-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=16MB"],
            stdout=log, stderr=log, user=self._user, cwd=self.dir,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError((self.dir / "server.log").read_text()[-2000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    pass
                if self._ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("PostgreSQL did not start in 30 s")

    def _ready(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def stop(self, sig: int = signal.SIGINT) -> None:
        """Stop the server (SIGINT: fast shutdown, connections dropped) and wait."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(sig)
            self._proc.wait(30)
        self._proc = None

    def kill(self) -> None:
        """SIGKILL the postmaster (its backends exit on their own; recovery on restart)."""
        self.stop(signal.SIGKILL)
        time.sleep(0.2)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
