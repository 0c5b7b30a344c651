"""The pages every tool reads: Python's HTML docs and a logged-in Django admin, on loopback."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.fixtures

from tests.fixtures.site import serve_directory  # noqa: E402

# Chromium refuses its sandbox to root: there the benchmarks run it without, explicitly.
SANDBOX = os.geteuid() != 0
# The pages are served on loopback, which the network policy refuses by default.
BENCH_BROWSER = {"sandbox": SANDBOX, "block_private_networks": False}
DOCS = Path("/usr/share/doc/python3.11/html")
# Page name in the report → path under the docs, or under the Django site.
DOC_PAGES = {
    "library/index": "library/index.html",
    "stdtypes": "library/stdtypes.html",
    "genindex-all": "genindex-all.html",
    "controlflow": "tutorial/controlflow.html",
}
ADMIN_PAGES = {"django admin": "admin/", "django add user": "admin/auth/user/add/"}

SETTINGS = """
SECRET_KEY = "bench-only-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1"]
INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.messages", "django.contrib.staticfiles",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "benchsite.AutoLogin",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "benchsite"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "DB_PATH"}}
STATIC_URL = "static/"
USE_TZ = True
"""
# Every tool sees the admin as the logged-in superuser, without a login flow of its own.
SITE = """
from django.contrib import admin
from django.contrib.auth import get_user_model, login
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]


class AutoLogin:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.user.is_authenticated:
            user = get_user_model().objects.get(username="admin")
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return self.get_response(request)
"""
CREATE_ADMIN = (
    "import django; django.setup(); from django.contrib.auth import get_user_model; "
    "get_user_model().objects.create_superuser('admin', 'admin@example.org', 'bench-pw')"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def docs() -> Iterator[str]:
    """Python's docs on 127.0.0.1; yields the base URL (with a trailing slash)."""
    server = serve_directory(DOCS)
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def django_admin() -> Iterator[str]:
    """A fresh Django project with a superuser, every request logged in; yields its base URL."""
    with tempfile.TemporaryDirectory(prefix="bench-django-") as where:
        (Path(where) / "settings.py").write_text(
            SETTINGS.replace("DB_PATH", str(Path(where) / "db.sqlite3"))
        )
        (Path(where) / "benchsite.py").write_text(SITE)
        env = {**os.environ, "PYTHONPATH": where, "DJANGO_SETTINGS_MODULE": "settings"}
        django = [sys.executable, "-m", "django"]
        subprocess.run([*django, "migrate", "-v", "0"], env=env, check=True, timeout=300)
        subprocess.run([sys.executable, "-c", CREATE_ADMIN], env=env, check=True, timeout=120)
        port = free_port()
        server = subprocess.Popen(
            [*django, "runserver", "--noreload", f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port)
            yield f"http://127.0.0.1:{port}/"
        finally:
            server.terminate()
            server.wait(30)


def wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")
