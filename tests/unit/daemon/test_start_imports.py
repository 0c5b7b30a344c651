"""The daemon's start imports only what every start needs.

``nostr-browserd run`` imports ``cli.main`` and ``cli.run`` and starts Playwright's driver,
then loads the config and imports ``daemon.app`` while the driver starts and Chromium
launches (``cli.run.serve``), then ``daemon.contextvm_link`` when the relays connect; those imports
compete with the launch and the first command (issue 24 §4, bench/report.md "Cold start").
The packages below serve only some commands or configs (``mcp``, ``mcp --to``, PostgreSQL,
a model provider's SDK, charts, cron rules, HTTP fetches, video) and take up to tenths of a
second to import, so the modules that need them import them where they are used.  (The
ContextVM server needs only the MCP wire types, ``mcp_types``, not the SDK ``mcp`` whose
``mcp.types`` mirrors them.)
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ONLY_SOME_NEED = (
    "mcp",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "httpx2",
    "psycopg",
    "psycopg_pool",
    "anthropic",
    "openai",
    "matplotlib",
    "numpy",
    "croniter",  # a schedule with a cron rule
    "httpx",  # a download, a Blossom upload, a file fetched from the chat
    "av",  # a recording
)


def test_the_daemons_start_imports_no_package_only_some_commands_need():
    code = (
        "import sys, nostr_browserd.cli.main, nostr_browserd.daemon.app, "
        "nostr_browserd.daemon.contextvm_link\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(run.stdout.split()) & set(ONLY_SOME_NEED) == set()


# What ``run`` loads only beside the driver's start: the config's models, the daemon.
BESIDE_THE_DRIVER = (
    "pydantic",
    "nostr_browserd.daemon.config",
    "nostr_browserd.daemon.app",
    "nostr_browserd.browser.pool",
    "nostr_browserd.nostr.keys",
    "urllib.request",
)


@pytest.mark.parametrize("command", ["run", "mcp"])
def test_run_and_mcp_import_no_more_than_starting_playwrights_driver_needs(command):
    """``mcp --local`` starts as ``run`` does; the MCP SDK and its wire types come beside the
    driver too (cli.mcp)."""
    code = (
        f"import sys, nostr_browserd.cli.main, nostr_browserd.cli.{command}\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(run.stdout.split()) & {*BESIDE_THE_DRIVER, "mcp", "mcp_types"} == set()


def test_mcp_local_launches_and_opens_its_browser_before_the_mcp_sdk_is_imported(tmp_path):
    """``mcp --local`` reads its settings (``--caps`` too) before it launches Chromium, and
    opens the store and the browser while the MCP SDK imports (cli.mcp): neither step
    imports the SDK or its wire types (half a second, the GIL held)."""
    code = (
        "import sys\n"
        "from nostr_browserd.cli.mcp import _local_settings, parser\n"
        "from nostr_browserd.cli.options import McpOptions, parsed\n"
        "args = parser().parse_args(['--local', '--caps', 'navigate', '--tools', 'snapshot'])\n"
        "_local_settings(parsed(McpOptions, args))\n"
        "import nostr_browserd.mcp.local\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    env = {**os.environ, "NOSTR_BROWSERD_STATE_DIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert set(run.stdout.split()) & {"mcp", "mcp_types"} == set()


def test_the_mcp_sdks_fronts_put_off_run_in_full_on_the_first_name_asked_of_them():
    """``mcp --local`` imports the SDK's server side with the package fronts put off
    (``mcp.sdk_fronts``); the process still gets the whole SDK where it asks for it."""
    code = (
        "import sys\n"
        "from nostr_browserd.mcp.sdk_fronts import server_side\n"
        "server_side('..mcp.server', 'nostr_browserd.cli')\n"
        "before = {'mcp.client', 'mcp.server.mcpserver'} & set(sys.modules)\n"
        "from mcp import ClientSession\n"
        "from mcp.server import MCPServer\n"
        "import mcp, mcp.client.session, mcp.server.mcpserver\n"
        "assert ClientSession is mcp.client.session.ClientSession\n"
        "assert MCPServer is mcp.server.mcpserver.MCPServer\n"
        "print(sorted(before), sorted(set(mcp.__all__) - set(vars(mcp))))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]", "[]"], run.stdout
