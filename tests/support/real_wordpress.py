"""A real WordPress on loopback: Debian's `wordpress` package served by Apache with mod_php, on
MariaDB, for the tests that check the WordPress strategy against the real thing rather than our
stand-in (tests/support/targets/wordpress.py).

One per test worker (a session fixture): an Apache of its own on free loopback ports, a MariaDB
database of its own (dropped after) and, as Debian's package wants, a config file per site in
/etc/wordpress (`config-<name>.php`, which Debian's wp-config.php loads for the name the vhost's
`SetEnv WORDPRESS_CONFIG` gives; removed after). Its sites, one port each:

- `local`: http with `WP_ENVIRONMENT_TYPE` local (WordPress allows Application Passwords over
  plain http only then), pretty permalinks (`/%postname%/`, the rewrite rules in its vhost);
- `production`: the same install over http without that flag, so Application Passwords are off;
- `tls`: the same install over https, with a certificate of a private CA (`ca_file`) and no flag;
- `plain`: a second install (tables of its own) with plain permalinks and no rewrite rules, as
  WordPress starts out: its REST API answers only at `?rest_route=`;
- `broken`: the same install with its database at a closed port, WordPress's "Error establishing
  a database connection" (500) to every request.

Users (with an Application Password each, `credentials(login)`): `admin` (administrator; the
tests' own look at the site goes through `admin`, a client of the `local` site), `eda` (author:
no `unfiltered_html`, so kses filters what is sent) and `sam` (subscriber). On `plain`: `admin`
and `eda`.

Needs root (Apache's children run as www-data; /etc/wordpress is root's) and the packages:
`apt-get install wordpress apache2 libapache2-mod-php php-mysql`. `missing()` says what is not
there. The MariaDB server is CONTENTPLATFORM_TEST_MARIADB (`host:port`, default
127.0.0.1:3306), reached as root without a password, as on CI's machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Self

import httpx

from tests.support.tls import PrivateCA

WORDPRESS = Path("/usr/share/wordpress")
CONFIGS = Path("/etc/wordpress")
APACHE = Path("/usr/sbin/apache2")
MODULES = Path("/usr/lib/apache2/modules")
PHP = "php"
MARIADB = "mariadb"
SITES = ("local", "production", "tls", "plain", "broken")
# Sites served from the `local` install's tables; `plain` has its own.
SHARED_INSTALL = ("local", "production", "tls", "broken")
USERS = {"admin": "administrator", "eda": "author", "sam": "subscriber"}
PLAIN_USERS = {"admin": "administrator", "eda": "author"}
START_TIMEOUT = 60.0
# A request's bound: WordPress answers in tens of milliseconds, on a loaded machine in seconds.
TIMEOUT = 60.0


def missing() -> str | None:
    """What this machine lacks to run a real WordPress here, or None."""
    needed = {
        "Debian's wordpress package": WORDPRESS / "wp-load.php",
        "apache2": APACHE,
        "libapache2-mod-php": _php_module(),
        "mod_ssl": MODULES / "mod_ssl.so",
    }
    lacking = [name for name, path in needed.items() if path is None or not path.exists()]
    lacking += [tool for tool in (PHP, MARIADB) if shutil.which(tool) is None]
    if lacking:
        return (
            f"no real WordPress here ({', '.join(lacking)} missing: apt-get install wordpress "
            "apache2 libapache2-mod-php php-mysql)"
        )
    if os.geteuid() != 0:
        return "a real WordPress here needs root (Apache's www-data children, /etc/wordpress)"
    return None


def _php_module() -> Path | None:
    found = sorted(MODULES.glob("libphp*.so")) if MODULES.exists() else []
    return found[-1] if found else None


def free_port() -> int:
    """A loopback port nothing listens on now, below the range the kernel hands out for port 0
    and for outgoing connections: a port from that range, free when picked, can be taken by
    another test's server or a connection's own end before Apache binds it."""
    low = 32768
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


class RealWordPress:
    """The sites above, from `__enter__` to `__exit__`. `url(site)` is a site's address,
    `credentials(login, site)` a connection's credentials, `admin` a client of the `local`
    site's REST API (`/wp-json/wp/v2/...`) as the administrator."""

    def __init__(self) -> None:
        # The worker's pid in every name, so a later run can tell what a dead one left behind.
        self.token = f"cptest-{os.getpid()}-{secrets.token_hex(4)}"
        self.database = self.token.replace("-", "_")
        self.mariadb = os.environ.get("CONTENTPLATFORM_TEST_MARIADB", "127.0.0.1:3306")
        self.dir = Path(tempfile.mkdtemp(prefix=f"{self.token}-"))
        self.ports: dict[str, int] = {}
        self.users: dict[str, dict[str, dict[str, Any]]] = {}
        self.ca_file: Path
        self.identity: tuple[Path, Path]
        self._apache: subprocess.Popen[bytes] | None = None
        self.admin: httpx.Client

    # --- what the tests use ----------------------------------------------------------------

    def url(self, site: str = "local") -> str:
        scheme = "https" if site == "tls" else "http"
        return f"{scheme}://127.0.0.1:{self.ports[site]}"

    def credentials(self, login: str = "eda", site: str = "local") -> dict[str, str]:
        install = "plain" if site == "plain" else "local"
        return {
            "username": login,
            "applicationPassword": self.users[install][login]["password"],
        }

    def user_id(self, login: str, site: str = "local") -> int:
        return int(self.users["plain" if site == "plain" else "local"][login]["id"])

    def post(self, post_id: int | str) -> dict[str, Any]:
        """A post as the administrator sees it (`context=edit`: raw fields)."""
        response = self.admin.get(f"/posts/{post_id}", params={"context": "edit"})
        response.raise_for_status()
        found: dict[str, Any] = response.json()
        return found

    def marked(self, marker: str) -> list[dict[str, Any]]:
        """Every post whose content holds `marker`, in every status (the trash too)."""
        response = self.admin.get(
            "/posts",
            params={
                "search": marker,
                "status": "publish,future,draft,pending,private,trash",
                "context": "edit",
                "per_page": 100,
            },
        )
        response.raise_for_status()
        return [post for post in response.json() if marker in post["content"]["raw"]]

    def visit(self, url: str) -> httpx.Response:
        """`url` as a visitor gets it (no credentials)."""
        return self._visitor.get(url)

    def media(self, **params: Any) -> list[dict[str, Any]]:
        response = self.admin.get("/media", params={"context": "edit", "per_page": 100, **params})
        response.raise_for_status()
        found: list[dict[str, Any]] = response.json()
        return found

    # --- set-up and tear-down --------------------------------------------------------------

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()
        for client in ("admin", "_visitor"):
            if getattr(self, client, None) is not None:
                getattr(self, client).close()
        for site in SITES:
            (CONFIGS / f"config-{self.token}-{site}.php").unlink(missing_ok=True)
        self._sql(f"DROP DATABASE IF EXISTS `{self.database}`", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _start(self) -> None:
        self._sweep()
        self.dir.chmod(0o755)  # Apache's www-data children read the content directory
        content = self.dir / "wp-content"
        (content / "uploads").mkdir(parents=True)
        web = pwd.getpwnam("www-data")
        os.chown(content / "uploads", web.pw_uid, web.pw_gid)
        # A certificate for the `tls` site from a CA of its own, which nothing trusts unless told.
        ca = PrivateCA(self.dir)
        self.ca_file = ca.ca_file
        self.identity = ca.issue("127.0.0.1")
        self._sql(f"CREATE DATABASE `{self.database}`")
        self._configure()
        installs = {
            "local": self._install("local", "/%postname%/", USERS),
            "plain": self._install("plain", "", PLAIN_USERS),
        }
        for install, process in installs.items():
            out, err = process.communicate(timeout=120)
            if process.returncode != 0:
                raise RuntimeError(f"installing WordPress ({install}) failed: {err.decode()}")
            self.users[install] = json.loads(out)
        self._visitor = httpx.Client(trust_env=False, timeout=TIMEOUT)
        self._serve()

    def ensure_serving(self) -> None:
        """Apache started again, with a warning saying how it ended, if it has stopped."""
        assert self._apache is not None
        if self._apache.poll() is None:
            return
        warnings.warn(
            f"Apache had stopped (exit {self._apache.returncode}); started again. "
            f"Its log:\n{self._log()}",
            stacklevel=2,
        )
        self._serve()

    def _configure(self) -> None:
        """Each site's config, for the ports of the moment (each names its address)."""
        if not self.ports:
            self.ports = {site: free_port() for site in SITES}
        for site in SITES:
            path = CONFIGS / f"config-{self.token}-{site}.php"
            path.write_text(self._config(site))
            path.chmod(0o644)

    def _serve(self, tries: int = 3) -> None:
        """Apache serving every site; on ports of its own again when one was taken meanwhile."""
        for attempt in range(1, tries + 1):
            if attempt > 1:
                self.ports = {}
                self._configure()
            (self.dir / "httpd.conf").write_text(self._apache_config())
            command = [str(APACHE), "-f", str(self.dir / "httpd.conf"), "-DFOREGROUND"]
            if shutil.which("setpriv"):
                # Should the test worker die without tearing down, its Apache goes with it.
                command = ["setpriv", "--pdeathsig", "TERM", "--", *command]
            with open(self.dir / "apache.out", "ab") as out:
                self._apache = subprocess.Popen(
                    command, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
                )
            if self._served():
                break
            self._stop()
            if attempt == tries:
                raise RuntimeError(f"Apache did not serve the WordPress sites:\n{self._log()}")
        if getattr(self, "admin", None) is not None:
            self.admin.close()
        self.admin = httpx.Client(
            base_url=f"{self.url('local')}/wp-json/wp/v2",
            auth=("admin", self.users["local"]["admin"]["password"]),
            trust_env=False,
            timeout=TIMEOUT,
        )

    def _sweep(self) -> None:
        """What runs that were killed left (configs, databases, directories, all named
        `cptest-<pid>-...`): any whose pid is no longer running. Their Apache went with them
        (`setpriv --pdeathsig`)."""

        def dead(name: str) -> bool:
            pid = name.replace("_", "-").split("-")[1]
            return pid.isdigit() and not Path(f"/proc/{pid}").exists()

        for config in CONFIGS.glob("config-cptest-*.php"):
            if dead(config.name.removeprefix("config-")):
                config.unlink(missing_ok=True)
        for directory in Path(tempfile.gettempdir()).glob("cptest-*"):
            if directory.is_dir() and dead(directory.name):
                shutil.rmtree(directory, ignore_errors=True)
        for database in self._sql("SHOW DATABASES LIKE 'cptest\\_%'").split():
            if dead(database):
                self._sql(f"DROP DATABASE IF EXISTS `{database}`", check=False)

    def _served(self) -> bool:
        """Whether this Apache answers on every site's port (a port another process took
        meanwhile would connect too: Apache's own answer, `readme.html`, tells)."""
        assert self._apache is not None
        deadline = time.monotonic() + START_TIMEOUT
        trusting = ssl.create_default_context(cafile=str(self.ca_file))
        with httpx.Client(verify=trusting, trust_env=False, timeout=TIMEOUT) as client:
            for site in SITES:
                while True:
                    if self._apache.poll() is not None or time.monotonic() > deadline:
                        return False
                    try:
                        answer = client.get(f"{self.url(site)}/readme.html")
                    except httpx.TransportError:
                        time.sleep(0.05)
                        continue
                    if answer.status_code != 200 or "WordPress" not in answer.text:
                        return False
                    break
        return self._apache.poll() is None

    def _stop(self) -> None:
        if self._apache is None or self._apache.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._apache.pid, signal.SIGTERM)
        try:
            self._apache.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self._apache.pid, signal.SIGKILL)
            self._apache.wait()

    def _log(self) -> str:
        text = ""
        for name in ("apache.out", "error.log"):
            path = self.dir / name
            text += path.read_text(errors="replace") if path.exists() else ""
        return text[-4000:]

    def _sql(self, statement: str, *, check: bool = True) -> str:
        """What MariaDB printed for `statement` (no column names)."""
        host, _, port = self.mariadb.rpartition(":")
        done = subprocess.run(
            [MARIADB, "-h", host, "-P", port, "-u", "root", "-N", "-e", statement],
            check=check,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout

    def _config(self, site: str) -> str:
        """Debian's per-site config (/etc/wordpress/config-<name>.php) for `site`."""
        home = self.url(site)
        constants: dict[str, Any] = {
            "DB_NAME": self.database,
            "DB_USER": "root",
            "DB_PASSWORD": "",
            # A closed port for `broken`: WordPress cannot reach its database.
            "DB_HOST": f"127.0.0.1:{free_port()}" if site == "broken" else self.mariadb,
            "WP_HOME": home,
            "WP_SITEURL": home,
            "WP_CONTENT_DIR": str(self.dir / "wp-content"),
            "WP_CONTENT_URL": f"{home}/wp-content",
            # Nothing leaves loopback: no cron (pings, update checks), no outside requests.
            "DISABLE_WP_CRON": True,
            "WP_HTTP_BLOCK_EXTERNAL": True,
            "AUTOMATIC_UPDATER_DISABLED": True,
        }
        if site in ("local", "plain"):
            constants["WP_ENVIRONMENT_TYPE"] = "local"
        for name in ("AUTH", "SECURE_AUTH", "LOGGED_IN", "NONCE"):
            constants[f"{name}_KEY"] = secrets.token_hex(32)
            constants[f"{name}_SALT"] = secrets.token_hex(32)
        lines = [f"define({json.dumps(k)}, {json.dumps(v)});" for k, v in constants.items()]
        prefix = "plain_" if site == "plain" else "wp_"
        return "<?php\n" + "\n".join(lines) + f"\n$table_prefix = '{prefix}';\n"

    def _install(
        self, site: str, permalinks: str, users: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        """WordPress installed into `site`'s tables by PHP's CLI (wp_install, as the install
        form does), with `users` and an Application Password each."""
        script = self.dir / f"install-{site}.php"
        script.write_text(INSTALL)
        environment = {
            **os.environ,
            "WORDPRESS_CONFIG": f"{self.token}-{site}",
            "CP_PERMALINKS": permalinks,
            "CP_USERS": json.dumps(users),
        }
        return subprocess.Popen(
            [PHP, str(script)],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def _apache_config(self) -> str:
        here = self.dir
        modules = [
            ("mpm_prefork_module", "mod_mpm_prefork.so"),
            ("authz_core_module", "mod_authz_core.so"),
            ("dir_module", "mod_dir.so"),
            ("mime_module", "mod_mime.so"),
            ("rewrite_module", "mod_rewrite.so"),
            ("env_module", "mod_env.so"),
            ("alias_module", "mod_alias.so"),
            ("ssl_module", "mod_ssl.so"),
            ("socache_shmcb_module", "mod_socache_shmcb.so"),
        ]
        loads = [f"LoadModule {name} {MODULES / file}" for name, file in modules]
        loads.append(f"LoadModule php_module {_php_module()}")
        listens = [f"Listen 127.0.0.1:{self.ports[site]}" for site in SITES]
        hosts = [self._vhost(site) for site in SITES]
        return "\n".join(
            [
                f"ServerRoot {here}",
                "ServerName 127.0.0.1",
                f"PidFile {here}/apache.pid",
                f"DefaultRuntimeDir {here}",
                f"Mutex file:{here}",
                f"ErrorLog {here}/error.log",
                "LogLevel warn",
                *loads,
                "User www-data",
                "Group www-data",
                # A test worker sends one request at a time; WordPress may call itself too.
                "StartServers 2",
                "MinSpareServers 1",
                "MaxSpareServers 4",
                "MaxRequestWorkers 10",
                "TypesConfig /etc/mime.types",
                f"SSLSessionCache shmcb:{here}/ssl_cache(51200)",
                *listens,
                '<FilesMatch "\\.php$">',
                "  SetHandler application/x-httpd-php",
                "</FilesMatch>",
                "DirectoryIndex index.php",
                "<Directory />",
                "  AllowOverride None",
                "  Require all denied",
                "</Directory>",
                *hosts,
            ]
        )

    def _vhost(self, site: str) -> str:
        """As Debian's README.Debian sets a site up: the package's files as the document root,
        WP_CONTENT_DIR aliased as /wp-content, the config named by WORDPRESS_CONFIG, and (for
        pretty permalinks) WordPress's rewrite rules."""
        rewrite = (
            [
                "    RewriteEngine On",
                "    RewriteBase /",
                "    RewriteRule ^index\\.php$ - [L]",
                "    RewriteCond %{REQUEST_FILENAME} !-f",
                "    RewriteCond %{REQUEST_FILENAME} !-d",
                "    RewriteRule . /index.php [L]",
            ]
            if site != "plain"
            else []
        )
        tls = (
            [
                "  SSLEngine on",
                f"  SSLCertificateFile {self.identity[0]}",
                f"  SSLCertificateKeyFile {self.identity[1]}",
            ]
            if site == "tls"
            else []
        )
        return "\n".join(
            [
                f"<VirtualHost 127.0.0.1:{self.ports[site]}>",
                "  ServerName 127.0.0.1",
                f"  DocumentRoot {WORDPRESS}",
                f"  SetEnv WORDPRESS_CONFIG {self.token}-{site}",
                *tls,
                f"  Alias /wp-content {self.dir}/wp-content",
                f"  <Directory {WORDPRESS}>",
                "    Require all granted",
                *rewrite,
                "  </Directory>",
                f"  <Directory {self.dir}/wp-content>",
                "    Require all granted",
                "  </Directory>",
                "</VirtualHost>",
            ]
        )


# Run by PHP's CLI with WORDPRESS_CONFIG naming the site's config: installs WordPress, sets the
# permalink structure, makes the users and prints their ids and Application Passwords as JSON.
INSTALL = r"""<?php
$_SERVER['HTTP_HOST'] = '127.0.0.1';
define('WP_INSTALLING', true);
require '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
// No mail, and no request anywhere (the install's loopback check of pretty permalinks).
add_filter('pre_http_request', function () { return new WP_Error('offline', 'offline'); });
add_filter('pre_wp_mail', '__return_false');
$installed = wp_install('Content Platform test site', 'admin', 'admin@example.test', false, '',
    wp_generate_password(24));
update_option('permalink_structure', getenv('CP_PERMALINKS'));
$users = array();
foreach (json_decode(getenv('CP_USERS'), true) as $login => $role) {
    $id = $login === 'admin' ? $installed['user_id'] : wp_insert_user(array(
        'user_login' => $login,
        'user_pass' => wp_generate_password(24),
        'user_email' => "$login@example.test",
        'display_name' => ucfirst($login),
        'role' => $role,
    ));
    if (is_wp_error($id)) {
        fwrite(STDERR, $id->get_error_message());
        exit(1);
    }
    $made = WP_Application_Passwords::create_new_application_password(
        $id, array('name' => 'contentplatform tests'));
    $users[$login] = array('id' => $id, 'password' => $made[0]);
}
echo json_encode($users);
"""
