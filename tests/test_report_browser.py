"""matrix.html in a real browser (issue 12): Chromium from apt, driven by Playwright.

The page is built from the golden inputs (tests/fixtures/junit/golden/inputs) and opened at
1400 and 800 px (and, with the project's matrix.yaml as ``--config``, at 390 px too): the grid starts in the first viewport, nothing scrolls sideways at 800 px, a red
cell shows its signature without hovering, clicking a cell shows its cases with a log link that
resolves to a file, and the hung case's excerpt holds the watchdog's stack dump. Screenshots go
to ``$REPRO_ARTIFACTS`` (default: the test's tmp dir) for CI to upload.

Chromium: ``/usr/bin/chromium`` (``apt-get install -y chromium``, done here when root and
missing, like tests/test_docker_integration.py installs docker.io); Playwright's own browser
download is not used (``executable_path``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from repro import config as matrix_config
from repro.config import Expectation
from repro.report.merge import build_report
from repro.report.outputs import write_outputs

GOLDEN_INPUTS = Path(__file__).parent / "fixtures" / "junit" / "golden" / "inputs"
CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT_HEIGHT = 800


def _ensure_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("no /usr/bin/chromium, and no root apt-get to install it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900
        )
    if done.returncode != 0 or not CHROMIUM.exists():
        pytest.skip(f"apt-get install chromium failed: {(done.stderr or done.stdout)[-300:]}")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (dev)")
    _ensure_chromium()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], timeout=60_000
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    shutil.copytree(GOLDEN_INPUTS, out / "inputs")
    # One expect: entry that matches nothing gives the page a warning to fold away.
    unmatched = Expectation(0, "an entry for a case that did not run", case="nope[*]")
    write_outputs(build_report([out / "inputs"], expectations=[unmatched]), out)
    return out


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("REPRO_ARTIFACTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.slow
def test_matrix_html_as_a_person_sees_it(browser, site, artifacts, width):
    page = browser.new_page(viewport={"width": width, "height": VIEWPORT_HEIGHT})
    try:
        page.goto((site / "matrix.html").as_uri())
        page.screenshot(path=str(artifacts / f"matrix-{width}.png"))

        grid_top = page.locator("table.matrix").bounding_box()["y"]
        assert 0 <= grid_top < VIEWPORT_HEIGHT / 2, f"grid starts at {grid_top}px"
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth,"
            " document.querySelector('.wrap').scrollWidth, document.querySelector('.wrap').clientWidth]"
        )
        assert widths[0] <= widths[1], f"page scrolls sideways at {width}px: {widths}"
        assert widths[2] <= widths[3], f"the grid scrolls sideways at {width}px: {widths}"

        # A red cell shows its signature as visible text, no hover needed.
        red = page.locator("td.cell.s-hung")
        assert red.count() == 1
        assert red.locator(".sig").is_visible()
        assert red.locator(".sig").inner_text() == "fork_after_thread_lock"
        invalid = page.locator("td.cell.s-invalid .sig")
        assert "not well-formed XML" in invalid.inner_text()

        # Warnings never push the grid down: folded into one line below it.
        folded = page.locator("details.warnings")
        assert folded.count() == 1 and folded.locator("summary").inner_text().startswith(
            "1 warning"
        )
        assert folded.bounding_box()["y"] > grid_top
        assert not folded.locator("li").first.is_visible()  # closed until clicked

        # Click the red cell: its cases show, with a log link beside the outcome that resolves.
        red.locator("a").click()
        section = page.locator("section.cell-detail:target")
        hung_row = section.locator("tr", has=page.locator(".badge.s-hung"))
        log = hung_row.locator("td.outcome a.log")
        assert log.is_visible()
        box = log.bounding_box()
        assert box["x"] + box["width"] <= width, "log link off screen"
        href = log.get_attribute("href")
        assert (site / urllib.parse.unquote(href)).is_file()

        # The message column is wide enough to read (no word split per line).
        message = hung_row.locator("td.msg")
        assert message.bounding_box()["width"] >= 150

        # The hung case's excerpt starts at the watchdog's stack dump.
        hung_row.locator("details.excerpt summary").click()
        excerpt = hung_row.locator("details.excerpt pre")
        assert excerpt.is_visible()
        text = excerpt.inner_text()
        assert "# repro watchdog: dumping stacks" in text and "Thread 0x" in text
        assert text.index("Thread 0x") < text.index("kernel log tail")
        page.screenshot(path=str(artifacts / f"matrix-{width}-hung-case.png"))
        after = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert after[0] <= after[1], f"the open drill-down scrolls sideways at {width}px: {after}"
    finally:
        page.close()


@pytest.fixture(scope="module")
def site_with_config(tmp_path_factory) -> Path:
    """The golden inputs reported with the project's matrix.yaml (``repro report --config``):
    12 ``expect:`` entries, 40-odd coverage warnings."""
    out = tmp_path_factory.mktemp("site-config")
    shutil.copytree(GOLDEN_INPUTS, out / "inputs")
    config = matrix_config.load(Path(__file__).parent.parent / "matrix.yaml")
    write_outputs(build_report([out / "inputs"], config=config), out)
    return out


@pytest.mark.parametrize("width", [1400, 800, 390])
@pytest.mark.slow
def test_with_config_red_cells_come_first_on_the_first_screen(
    browser, site_with_config, artifacts, width
):
    page = browser.new_page(viewport={"width": width, "height": VIEWPORT_HEIGHT})
    try:
        page.goto((site_with_config / "matrix.html").as_uri())
        page.screenshot(path=str(artifacts / f"matrix-config-{width}.png"))

        # Every red cell of the grid lies inside the first screen, without scrolling.
        red = page.locator("td.cell.s-failed, td.cell.s-error, td.cell.s-crashed, td.cell.s-hung")
        assert red.count() >= 2
        # At 390 px one cell column fits beside the host names: the red cells of the first red
        # column are on the first screen, the other red columns one sideways scroll away
        # (three red columns since runs merge per case).
        boxes = [red.nth(i).bounding_box() for i in range(red.count())]
        assert all(box["y"] < VIEWPORT_HEIGHT for box in boxes), boxes
        if width >= 800:
            assert all(box["x"] < width for box in boxes), boxes
        else:
            assert min(box["x"] for box in boxes) < width, boxes
        # ... because rows and columns with a red cell come first.
        # (Two hosts have a red cell since runs merge per case: the CPU host's failed ddp case
        # and the RTX 4090's hung one; both rows and both columns come first.)
        red_states = {"failed", "error", "crashed", "hung"}
        rows = page.locator("table.matrix tbody tr")
        for i in range(2):
            row_states = (
                rows.nth(i)
                .locator("td.cell")
                .evaluate_all("cells => cells.map(c => c.getAttribute('data-state'))")
            )
            assert red_states & set(row_states), (i, row_states)
        assert page.locator("td.cell.s-hung").count() == 1
        first_column = page.locator("table.matrix tbody tr td.cell:first-of-type")
        states = [first_column.nth(i).get_attribute("data-state") for i in range(2)]
        assert red_states & set(states), states

        # The expectations table is folded into one line below the grid.
        folded = page.locator("details.expectations")
        assert folded.count() == 1 and not folded.evaluate("d => d.open")
        assert folded.locator("summary").inner_text().startswith("14 expected reproductions")
        assert folded.bounding_box()["y"] > red.first.bounding_box()["y"]

        # Nothing scrolls the page sideways, even with every fold open.
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"page scrolls sideways at {width}px: {widths}"
    finally:
        page.close()
