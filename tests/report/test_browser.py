"""The report in real headless Chromium: no console errors, every figure and image rendered, the Pareto set
ringed on the chart, and no horizontal scrollbar in an 800-pixel window."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hebench.inversion.campaign import run_campaign
from hebench.inversion.evaluate import AttackPlan
from hebench.report.build import build_report
from hebench.results import ResultWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ARTIFACTS = Path(__file__).resolve().parents[2] / "reports" / "test-artifacts"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,1600",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.slow  # a report rendered in headless Chromium
def test_report_renders_without_errors(browser, tmp_path):
    attack_dir = tmp_path / "attacks"
    with ResultWriter(attack_dir / "attacks.jsonl") as writer:
        run_campaign([AttackPlan(images=1, seeds=1, restarts=1, steps=5)], writer, attack_dir)
    report = build_report(
        [FIXTURES / "run-quickstart", FIXTURES / "libraries" / "compare.jsonl", attack_dir / "attacks.jsonl"],
        tmp_path / "report.html",
    )
    browser.get(report.as_uri())
    sizes = browser.execute_script(
        "return [...document.querySelectorAll('svg, img')].map(e => {const r = e.getBoundingClientRect();"
        " return [e.tagName, r.width, r.height];});"
    )
    assert len(sizes) >= 7  # 2 cost + 3 quality figures, 1 library figure, 1 reconstruction grid
    assert all(w > 0 and h > 0 for _, w, h in sizes), sizes
    assert any(tag.lower() == "img" for tag, _, _ in sizes)  # the reconstruction grid
    charts = browser.execute_script(
        "return [...document.querySelectorAll('figure.chart svg')].map(e => {const r = e.getBoundingClientRect();"
        " return [r.width, r.height, e.querySelectorAll('[id^=pareto-set]').length];});"
    )
    assert len(charts) == 1 and all(w > 0 and h > 0 for w, h, _ in charts), charts  # the cost-vs-leakage chart
    assert charts[0][2] > 0  # the Pareto set of "what to choose", ringed
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "report.png"))
    browser.set_window_size(800, 1000)
    widths = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " [...document.querySelectorAll('table')].map(t => t.getBoundingClientRect().right)];"
    )
    assert widths[0] <= widths[1], widths  # no horizontal scrollbar at 800 px
    assert max(widths[2]) <= widths[1], widths
