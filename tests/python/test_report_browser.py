"""report.html in a real headless browser (Debian's `chromium`): the per-step timeline and the violations
table render with the expected counts, offline (traincheck-check) and online (traincheck-onlinecheck
--exit-on-idle -v), and a screenshot of each page is kept as a test artifact (its folder is printed).

Data: the committed synthetic traces of tests/cpp/data/e2e. buggy_run breaks 8 invariants at step 4
(Adam.step skips _foreach_add_) and 3 at step 5 (zero_grad leaves the gradients), one violation each.
Without chromium the browser tests skip; scripts/install_deps.sh installs it."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tests" / "cpp" / "data" / "e2e"
INVARIANTS = E2E / "golden" / "invariants.json"
ARTIFACTS = Path(os.environ.get("TRAINCHECK_TEST_ARTIFACTS", REPO / "build" / "test-artifacts"))

MARK_RGB = (0xCF, 0x22, 0x2E)       # .tl-mark
FIRST_LINE_RGB = (0x82, 0x50, 0xDF)  # .tl-first


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed: apt-get install -y chromium (scripts/install_deps.sh does)")


def browse(page: Path, screenshot: Path, profile: Path) -> str:
    """The DOM as the browser built it, and a screenshot of the page."""
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--hide-scrollbars"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=300)
    assert dom.returncode == 0 and "<svg" in dom.stdout, dom.stderr
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    shot = subprocess.run(base + [f"--screenshot={screenshot}", "--window-size=1280,1400", page.as_uri()],
                          capture_output=True, text=True, timeout=300)
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr
    print(f"report screenshot: {screenshot}")
    return dom.stdout


def colour_present(png: Path, rgb) -> bool:
    image = pytest.importorskip("PIL.Image").open(png).convert("RGB")
    return rgb in {c for _, c in image.getcolors(maxcolors=1 << 20)}


def check_rendered(dom: str, png: Path):
    # Each of the 11 violated invariants: one row and one mark in the timeline, one row in the table.
    assert dom.count('class="tl-mark"') == 11
    assert dom.count('class="tl-mark" data-step="4"') == 8
    assert dom.count('class="tl-mark" data-step="5"') == 3
    assert dom.count('<g class="tl-row') == 11
    assert dom.count('<tr class="vrow">') == 11
    assert 'First bad step: <b class="first-bad-step">4</b>' in dom
    assert "<script" not in dom
    # Drawn, not only parsed: the marks and the first-bad-step line are on the screen.
    assert colour_present(png, MARK_RGB)
    assert colour_present(png, FIRST_LINE_RGB)


def test_offline_report_shows_when_training_went_wrong(tmp_path):
    result = subprocess.run(["traincheck-check", "-f", str(E2E / "buggy_run"), "-i", str(INVARIANTS), "-o", "results", "-j", "2"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "[check] buggy_run: 11 invariants violated, the first at step 4:" in result.stderr
    dom = browse(tmp_path / "results" / "report.html", ARTIFACTS / "report_offline.png", tmp_path / "profile")
    check_rendered(dom, ARTIFACTS / "report_offline.png")


def test_online_report_and_console_after_exit_on_idle(tmp_path):
    # --exit-on-idle ends the run once the finished traces give nothing new; -v prints each violation.
    result = subprocess.run(["traincheck-onlinecheck", "-f", str(E2E / "buggy_run"), "-i", str(INVARIANTS), "-o", "oc",
                             "--exit-on-idle", "1", "-v"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "stopping (--exit-on-idle)" in result.stderr
    assert result.stderr.count("violation: ") == 11, result.stderr
    assert "violation: Adam.step() always calls _foreach_add_() at step 4 (1 so far, first at step 4)" in result.stderr
    [log] = tmp_path.glob("traincheck_onlinechecker_*_relation_first_False.log")
    lines = log.read_text().splitlines()
    at = lines.index("Total 11 invariants violated:")
    assert lines[at - 2:at] == ["Checker stopped", "Total 11 violations found"]
    assert lines[at + 1].split() == ["first", "step", "last", "step", "violations", "invariant"]
    assert lines[at + 2].split()[:3] == ["4", "4", "1"]
    assert lines[at + 12].split()[:3] == ["5", "5", "1"] and len(lines) == at + 13
    dom = browse(tmp_path / "oc" / "report.html", ARTIFACTS / "report_online.png", tmp_path / "profile")
    check_rendered(dom, ARTIFACTS / "report_online.png")
