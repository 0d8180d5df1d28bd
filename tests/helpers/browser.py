"""Headless Chromium (Debian's, /usr/bin/chromium) driven by Playwright, for the
tests of what a browser does: CORS, the GraphiQL page served offline.

    browser = browser_fixture()  # in a test module: one browser per module

Tests using it are sync functions (Playwright's sync API runs its own loop), and
are skipped, with the reason, where no chromium is installed.
"""

import shutil
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright


def chromium() -> str | None:
    return next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )


def browser_fixture() -> Callable[..., Iterator[Browser]]:
    @pytest.fixture(scope="module")
    def browser() -> Iterator[Browser]:
        executable = chromium()
        if executable is None:
            pytest.skip("chromium is not installed (apt-get install chromium): no browser test")
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
            )
            yield launched
            launched.close()

    return browser
