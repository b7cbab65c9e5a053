"""A throw-away PostgreSQL for tests (issue 16): initdb + pg_ctl in a temp folder, listening
on a unix socket in that folder only (no TCP, no systemd, nothing installed or left behind).
Standard library only; the binaries come from Debian's `postgresql` (.ci/packages).

    with TempPostgres() as pg:
        pg.conninfo        # "host=/tmp/pgtemp.x/sock port=5432 user=postgres dbname=postgres"
        pg.psql("SELECT 1")

PostgreSQL refuses to run as root: as root the server runs as the `postgres` user the
package made (runuser), and the folder is handed to it; clients (root, the daemons) connect
over the socket with trust authentication, which is safe because the socket's folder is
reachable by root and `postgres` only.

As a command it runs one program with the database's conninfo in STOCKADE_TEST_PG:
    python3 pgtemp.py -- ./test_cluster_pg
Skips (exit 77, or failure under STOCKADE_MUST_WORK=1) when PostgreSQL is not installed."""
import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stockade_fixture import skip  # noqa: E402  (the one skip rule: STOCKADE_MUST_WORK)

START_TIMEOUT_S = 60  # initdb + first start on a loaded machine


def pg_bindir():
    """The newest installed server's bin folder (/usr/lib/postgresql/<major>/bin)."""
    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
             if os.access(os.path.join(d, "initdb"), os.X_OK)]
    found.sort(key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    return found[-1] if found else None


class TempPostgres:
    def __init__(self):
        self.bindir = pg_bindir()
        if not self.bindir or not shutil.which("psql"):
            skip("PostgreSQL is not installed (apt-get install postgresql; see .ci/packages)")
        self.root = None
        self.run_as = None
        self.port = 5432  # the socket lives in our own folder: no clash with any other server

    @property
    def data(self):
        return os.path.join(self.root, "data")

    @property
    def sockdir(self):
        return os.path.join(self.root, "sock")

    @property
    def conninfo(self):
        return f"host={self.sockdir} port={self.port} user=postgres dbname=postgres"

    def _server_cmd(self, *argv):
        cmd = [os.path.join(self.bindir, argv[0]), *argv[1:]]
        return ["runuser", "-u", self.run_as, "--", *cmd] if self.run_as else cmd

    def _run(self, *argv, check=True):
        r = subprocess.run(self._server_cmd(*argv), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return r

    def start(self):
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                skip("no 'postgres' user to run PostgreSQL as (the postgresql package makes it)")
            self.run_as = "postgres"
        self.root = tempfile.mkdtemp(prefix="pgtemp.")
        os.makedirs(self.sockdir)
        if self.run_as:
            for p in (self.root, self.sockdir):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        self.restart_server(start_only=True)
        return self

    def restart_server(self, start_only=False):
        """pg_ctl start (and stop first unless start_only); waits until it accepts."""
        if not start_only:
            self.stop_server()
        opts = (f"-c listen_addresses='' -c unix_socket_directories='{self.sockdir}'"
                f" -c port={self.port} -c fsync=off -c max_connections=200")
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.data, "server.log"),
                  "-o", opts, "-w", "-t", str(START_TIMEOUT_S), "start")

    def stop_server(self):
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", check=False)

    def stop(self):
        if not self.root:
            return
        self.stop_server()
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def psql(self, sql):
        """Runs sql; returns its rows as lists of strings (unaligned, tab-separated)."""
        r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-d", self.conninfo, "-c", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()}")
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def log_tail(self, n=30):
        with contextlib.suppress(OSError):
            with open(os.path.join(self.data, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        return ""

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        if exc[0] is not None:
            print("---- postgresql log (tail) ----\n" + self.log_tail(), file=sys.stderr)
        self.stop()
        return False


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        print("usage: pgtemp.py -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    with TempPostgres() as pg:
        env = dict(os.environ, STOCKADE_TEST_PG=pg.conninfo)
        return subprocess.run(argv[2:], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
