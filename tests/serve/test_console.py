"""The web console in headless Chromium: open an instance, call tools from the generated form,
and watch the diff grow."""

from __future__ import annotations

import shutil

import pytest

from atoll.worlds.serve import create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium) so the console is untested",
)


@pytest.fixture(scope="module")
def page():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page()
        page.set_default_timeout(10_000)
        yield page
        browser.close()


def test_the_console_opens_an_instance_calls_tools_and_shows_the_diff_growing(page, shop, serve):
    with serve(create_app([shop], token="s3cret")) as url:
        page.goto(f"{url}/?token=s3cret")
        page.wait_for_selector("#fixture option[value=tiny]", state="attached")
        page.fill("#seed", "2")
        page.click("#open")
        page.wait_for_selector("#tools button[data-tool=set_status]")
        assert "shop / tiny, seed 2" in page.inner_text("#status")
        assert page.inner_text("#diff") == "No changes."

        page.click("#tools button[data-tool=set_status]")
        page.fill("#arg-order_id", "1")
        page.fill("#arg-status", "shipped")
        page.click("#call")
        page.wait_for_selector("#diff [data-diff-table=orders]")
        assert "status: open → shipped" in page.inner_text("#diff")
        assert page.inner_text("#diff-count") == "(1 row)"

        page.click("#tools button[data-tool=add_customer]")
        page.fill("#arg-name", "Zed")
        page.click("#call")
        page.wait_for_selector("#diff [data-diff-table=customers]")
        assert page.inner_text("#diff-count") == "(2 rows)"
        assert "Zed" in page.inner_text("#diff")
        assert page.locator("#calls li").count() == 2

        page.click("#tools button[data-tool=get_customer]")
        page.fill("#arg-customer_id", "C404")
        page.click("#call")
        page.wait_for_selector("#result.failed")
        assert "not_found" in page.inner_text("#result")
        assert page.inner_text("#diff-count") == "(2 rows)"  # a refused call changes nothing

        page.click("span[data-table=customers]")
        page.wait_for_selector("#rows table")
        assert "Zed" in page.inner_text("#rows")
