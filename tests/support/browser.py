"""The headless Chrome-family browser the e2e tests open kwokbench's HTML pages in (the report, the trend page)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def browser() -> tuple[str, str]:
    """A Chrome-family browser and its chromedriver: on GitHub's Ubuntu runners the preinstalled Google Chrome and
    the driver of the same version in $CHROMEWEBDRIVER (Ubuntu's chromium is a snap stub), else what is on PATH
    (Debian's chromium and chromium-driver, installed by `make system-deps`)."""
    chrome = shutil.which("google-chrome") or shutil.which("google-chrome-stable")
    runner_driver = Path(os.environ.get("CHROMEWEBDRIVER") or "/nonexistent") / "chromedriver"
    if chrome and runner_driver.is_file():
        return chrome, str(runner_driver)
    found, driver = shutil.which("chromium") or chrome, shutil.which("chromedriver")
    assert found and driver, "make system-deps installs Debian's chromium and chromium-driver"
    return found, driver


def headless(profile: Path) -> Any:
    """A headless browser session (``driver.quit()`` it), offline-minded, keeping the page's console log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = browser()
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1300,2000", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=opts)
