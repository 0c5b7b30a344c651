"""Browser settings, checked from inside the page; and close_all."""

import json

from tests.fixtures.site import ECHO_LOGIN, EchoHandler, serving


async def js(call, script):
    result = await call({"tool": "eval", "params": {"script": script}})
    assert result["success"], result
    return result["data"]["result"]


async def test_page_settings_reach_every_tab_and_new_ones(call, site_url):
    await call(f"open {site_url}/catalog.html")
    assert (await call("set_viewport 500 400"))["success"]
    assert await js(call, "[innerWidth, innerHeight]") == [500, 400]
    assert (await call("set_media dark"))["data"]["media"] == {"color_scheme": "dark"}
    await call({"tool": "set_media", "params": {"reduced_motion": "reduce"}})
    assert await js(
        call,
        "[matchMedia('(prefers-color-scheme: dark)').matches,"
        " matchMedia('(prefers-reduced-motion: reduce)').matches]",
    ) == [True, True]
    assert (await call("set_timezone Asia/Tokyo"))["success"]
    assert (await call("set_locale de-DE"))["success"]
    zone_and_language = "[Intl.DateTimeFormat().resolvedOptions().timeZone, navigator.language]"
    assert await js(call, zone_and_language) == ["Asia/Tokyo", "de-DE"]
    assert await js(call, "(1234.5).toLocaleString()") == "1.234,5"

    await call(f"tab_new {site_url}/catalog.html")  # a later tab gets the same settings
    assert await js(call, "Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"
    await call("reload")  # the language a document starts with: from its next load on
    assert await js(call, zone_and_language) == ["Asia/Tokyo", "de-DE"]
    assert await js(call, "matchMedia('(prefers-color-scheme: dark)').matches") is True

    assert (await call("set_timezone Nowhere/Atall"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("set_locale 'not a locale'"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("set_viewport 5 5"))["error"]["code"] == "INVALID_PARAMS"
    assert await js(call, "Intl.DateTimeFormat().resolvedOptions().timeZone") == "Asia/Tokyo"


async def test_device_emulation(call, site_url):
    await call(f"open {site_url}/catalog.html")
    phone = await call("set_device iPhone 13")
    assert phone["data"]["mobile"] is True and phone["data"]["touch"] is True, phone
    assert await js(call, "[devicePixelRatio, navigator.maxTouchPoints]") == [3, 5]
    assert "iPhone" in await js(call, "navigator.userAgent")
    unknown = await call("set_device iphone 13")  # names are exact; near ones are offered
    assert (
        unknown["error"]["code"] == "INVALID_PARAMS" and "iPhone 13" in unknown["error"]["message"]
    )


async def test_network_settings(call, site_url, echo_url):
    await call(f"open {echo_url}/")
    assert (await call({"tool": "set_headers", "params": {"headers": {"X-Probe": "42"}}}))[
        "success"
    ]
    await call(f"open {echo_url}/headers")
    assert json.loads(await js(call, "document.body.innerText"))["X-Probe"] == "42"
    assert (await call("""set_headers {"X-Probe": "43"}"""))["success"]  # JSON in text
    await call("reload")
    assert json.loads(await js(call, "document.body.innerText"))["X-Probe"] == "43"
    bad = await call({"tool": "set_headers", "params": {"headers": {"Bad Name": "x"}}})
    assert bad["error"]["code"] == "INVALID_PARAMS"
    await call({"tool": "set_headers", "params": {"headers": {}}})

    user, password = ECHO_LOGIN
    assert (await call(f"open {echo_url}/auth"))["data"]["status"] == 401
    given = await call(f"set_credentials {user} {password}")
    assert given["data"]["username"] == user and password not in json.dumps(given), given
    assert (await call(f"open {echo_url}/auth"))["data"]["title"] == "Inside"
    await call({"tool": "set_credentials", "params": {}})
    assert (await call(f"open {echo_url}/auth"))["data"]["status"] == 401
    # credentials stay with their origin: another origin, even when it asks, gets none
    await call(f"set_credentials {user} {password} --origin {echo_url}")
    assert (await call(f"open {echo_url}/auth"))["data"]["title"] == "Inside"
    with serving(EchoHandler) as elsewhere:
        assert (await call(f"open {elsewhere}/auth"))["data"]["status"] == 401
        await call(f"open {elsewhere}/headers")
        headers = json.loads(await js(call, "document.body.innerText"))
        assert "Authorization" not in headers and "Host" in headers, headers
    await call(f"open {site_url}/catalog.html")
    assert (await call("set_offline"))["data"]["offline"] is True
    assert await js(call, "navigator.onLine") is False
    assert (await call(f"open {echo_url}/"))["error"]["code"] == "NAVIGATION_FAILED"
    await call("set_offline --no-offline")
    assert (await call(f"open {echo_url}/"))["success"]


async def test_geolocation(call, site_url):
    await call(f"open {site_url}/catalog.html")
    assert (await call("set_geo 48.85 2.35"))["data"]["latitude"] == 48.85
    await call("click #where")
    assert (await call("wait_for_text 48.85,2.35"))["success"]
    assert (await call("set_geo 91 0"))["error"]["code"] == "INVALID_PARAMS"


async def test_close_all_leaves_one_blank_tab(call, site_url):
    await call(f"open {site_url}/catalog.html")
    await call("storage_local_set kept yes")
    await call(f"tab_new {site_url}/index.html")
    closed = await call("close_all")
    assert closed["data"]["closed"] == ["t1", "t2"] and closed["data"]["active"] == "t3"
    tabs = (await call("tab_list"))["data"]["tabs"]
    assert [(t["tab"], t["url"]) for t in tabs] == [("t3", "about:blank")]
    await call(f"open {site_url}/catalog.html")
    assert (await call("storage_local_get_key kept"))["data"]["value"] == "yes"


async def test_close_all_closes_extra_windows_and_leaves_w1_with_one_tab(call, site_url):
    await call(f"open {site_url}/index.html")
    await call(f"window_new {site_url}/catalog.html")
    await call("tab_new")  # in w2, the active tab's window
    closed = await call("close_all")
    assert closed["data"]["closed"] == ["t1", "t2", "t3"] and closed["data"]["tab"] == "t4"
    windows = (await call("window_list"))["data"]["windows"]
    assert [(w["window"], [t["tab"] for t in w["tabs"]]) for w in windows] == [("w1", ["t4"])]
