"""The app in a real browser: Debian's chromium (headless) driven by selenium through Debian's chromedriver.

Starts `streamlit run app/streamlit_app.py` on a free localhost port, loads Explore, changes batch.size, sees the
predicted throughput change; Compare explains the faster scenario; Validate predicts a tiny run store and draws its
charts. Screenshots go under pytest's tmp_path (or $KAFKASIM_SCREENSHOT_DIR), never into the repository. Skipped, with the reason, when chromium, chromedriver or selenium is missing
(scripts/install-browser.sh installs the first two).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from kafkasim.app.app_command import streamlit_command

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("chromium and chromedriver are not installed (run scripts/install-browser.sh)",
                allow_module_level=True)

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

STARTUP_S = 90          # streamlit start-up on a busy 2-core machine
PREDICT_S = 120         # one prediction plus the browser's rerun round trip
THROUGHPUT = "throughput (records/s)"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1500,1100")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"streamlit did not answer on {url} within {STARTUP_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("streamlit")
    port = free_port()
    log = tmp_path / "streamlit.log"
    command = streamlit_command(port, "127.0.0.1") + ["--server.fileWatcherType", "none"]
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-', dir=tmp_path)}")
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    try:
        driver = webdriver.Chrome(options=options, service=service)
    except WebDriverException as exc:
        pytest.skip(f"chromium would not start under chromedriver: {exc.msg}")
    try:
        yield driver
    finally:
        driver.quit()


def metric_value(driver, label: str) -> str | None:
    """The text of the metric with this label, or None while the page is (re)rendering."""
    try:
        for metric in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stMetric"]'):
            if metric.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text.strip() == label:
                return metric.find_element(By.CSS_SELECTOR, '[data-testid="stMetricValue"]').text.strip()
    except StaleElementReferenceException:
        return None
    return None


def settled(driver) -> bool:
    """No rerun in progress: Streamlit shows its status widget while the script runs."""
    return not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]')


def screenshot_path(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("KAFKASIM_SCREENSHOT_DIR", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "explore-batch-size.png"


def test_changing_batch_size_in_the_browser_changes_the_predicted_throughput(app_url, browser, tmp_path):
    browser.get(f"{app_url}/?cap=5000")
    wait = WebDriverWait(browser, PREDICT_S, poll_frequency=0.25)
    before = wait.until(lambda d: settled(d) and metric_value(d, THROUGHPUT))
    assert float(before.replace(",", "")) > 0

    field = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, 'input[aria-label="batch.size"]'))
    assert field.get_attribute("value") == "16384"             # kontur-2020/I, the default example
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("65536", Keys.ENTER)
    changed_at = time.monotonic()
    after = wait.until(lambda d: settled(d) and (v := metric_value(d, THROUGHPUT)) not in (None, before) and v)
    refresh_s = time.monotonic() - changed_at
    assert float(after.replace(",", "")) != float(before.replace(",", ""))
    assert "producer.batch.size=65536" in browser.current_url    # the URL carries the change

    shot = screenshot_path(tmp_path)
    assert browser.save_screenshot(str(shot))
    print(f"throughput {before} -> {after} records/s, refreshed in the browser in {refresh_s:.1f} s; "
          f"screenshot {shot}")


def test_compare_in_the_browser_explains_the_faster_scenario(app_url, browser, tmp_path):
    browser.get(f"{app_url}/compare?cap=5000&c=kontur-2020/I&c=kontur-2020/I;producer.batch.size=65536")
    wait = WebDriverWait(browser, PREDICT_S, poll_frequency=0.25)
    a = wait.until(lambda d: settled(d) and metric_value(d, "A: records/s"))
    b = wait.until(lambda d: metric_value(d, "B: records/s"))
    assert float(b.replace(",", "")) > float(a.replace(",", ""))
    why = wait.until(lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, '[data-testid="stMarkdown"]')
                                if e.text.startswith(("A is faster", "B is faster"))])
    assert why[0].startswith("B is faster"), why
    assert "producer.batch.size 16384 → 65536" in why[0]
    shot = screenshot_path(tmp_path).with_name("compare.png")
    assert browser.save_screenshot(str(shot))


def test_validate_in_the_browser_predicts_a_run_store(app_url, browser, tmp_path, tiny_store):
    browser.get(f"{app_url}/validate?cap=2000&profile=local-2core&matrix=none&runs={tiny_store}")
    wait = WebDriverWait(browser, PREDICT_S, poll_frequency=0.25)
    button = wait.until(lambda d: settled(d) and next(
        (b for b in d.find_elements(By.CSS_SELECTOR, "button") if b.text.startswith("Predict ")), None))
    assert button.text == "Predict 3 configurations"
    button.click()
    error = wait.until(lambda d: settled(d) and metric_value(d, "held-out throughput error"))
    assert error.endswith("%")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"] canvas, '
                                                              '[data-testid="stVegaLiteChart"] svg')) >= 3)
    shot = screenshot_path(tmp_path).with_name("validate.png")
    assert browser.save_screenshot(str(shot))
    print(f"held-out throughput error {error}; screenshot {shot}")
