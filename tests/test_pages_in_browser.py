"""Every built page read as its readers read it: in headless Chromium (Debian's `chromium`, driven by Playwright) at
1,400×900 and 390×844, the main column never overflows outside a scroll container, every image the book ships loads
and the console logs no error; the scorecard's claim table shows its five columns without scrolling at 1,400 px.

The book is built offline, so requests that leave the machine (the Colab badge, Colab's and thebe's scripts) are
refused here and their failures are not the page's: a reader online fetches them."""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [  # a root user's sandbox, no GPU, and none of Chromium's own calls home (refused here, many at a time)
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SIZES = {"desktop": (1400, 900), "phone": (390, 844)}
SKIPPED = {"genindex.html", "search.html", "index.html"}  # Sphinx's index pages; index.html redirects to the intro

OVERFLOW = """() => {
  const main = document.querySelector("article.bd-article");
  const edge = main.getBoundingClientRect();
  const scrolls = (el) => ["auto", "scroll", "hidden"].includes(getComputedStyle(el).overflowX);
  const out = [];
  for (const el of main.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || el.closest("[hidden], details:not([open]) > :not(summary)")) continue;
    if (r.right <= edge.right + 1 && r.left >= edge.left - 1) continue;
    let p = el.parentElement, inside = false;
    for (; p && p !== main; p = p.parentElement) if (scrolls(p)) { inside = true; break; }
    const where = `${Math.round(r.left)}–${Math.round(r.right)} px`;
    if (!inside) out.push(`${el.tagName.toLowerCase()}.${el.className} (${where})`);
  }
  const wide = document.documentElement.scrollWidth;
  const page = wide > window.innerWidth ? [`page ${wide} px wide`] : [];
  const images = [...document.images].filter((i) => i.src.startsWith("file:") && !(i.complete && i.naturalWidth > 0));
  return {overflow: [...page, ...out.slice(0, 5)], broken: images.map((i) => i.src)};
}"""

CLAIM_TABLE = """() => {
  const table = document.querySelector("table.claim-table");
  const main = document.querySelector("article.bd-article").getBoundingClientRect();
  const box = table.parentElement;
  const heads = [...table.tHead.rows[0].cells].map((c) => c.getBoundingClientRect().right <= main.right + 1);
  const rows = [...table.tBodies[0].rows];
  return {columns: heads, rows: rows.length, scrolled: box.scrollWidth > box.clientWidth + 1,
          shown: document.querySelector("div.claim-filter span").textContent};
}"""


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium on PATH: CI installs Debian's package (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def _pages(book: Path) -> list[Path]:
    return sorted(p for p in book.rglob("*.html") if p.name not in SKIPPED and "_static" not in p.parts)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_every_page_fits_its_column_loads_its_images_and_logs_no_error(built_book, browser, size):
    width, height = SIZES[size]
    page = browser.new_page(viewport={"width": width, "height": height})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and m.location.get("url", "").startswith("file:") else 0,
    )
    problems = {}
    pages = _pages(built_book)
    assert len(pages) >= 8
    for html in pages:
        errors.clear()
        page.goto(html.as_uri(), wait_until="load")
        found = page.evaluate(OVERFLOW)
        if found["overflow"] or found["broken"] or errors:
            problems[html.name] = {**found, "console": errors[:3]}
    page.close()
    assert not problems, problems


@pytest.mark.slow
def test_the_claim_table_shows_its_columns_for_every_row_at_1400_px_and_filters(built_book, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto((built_book / "generated" / "06_scorecard.html").as_uri(), wait_until="load")
    table = page.evaluate(CLAIM_TABLE)
    assert all(table["columns"]) and not table["scrolled"] and table["rows"] >= 30
    assert table["shown"] == f"showing {table['rows']} of {table['rows']} claims"
    page.locator("table.claim-table").scroll_into_view_if_needed()
    page.screenshot(path=str(built_book.parent / "scorecard-1400.png"))  # kept beside the book, to look at
    # filter by verdict, then sort by effect: the rows shown follow
    page.select_option("div.claim-filter select[data-key=verdict]", "holds")
    rows = "[...document.querySelectorAll('table.claim-table tbody tr')]"
    shown = page.evaluate(f"() => {rows}.filter(r => !r.hidden).map(r => r.dataset.verdict)")
    assert 0 < len(shown) < table["rows"] and set(shown) == {"holds"}
    page.click("table.claim-table th.effect")
    effects = page.evaluate(f"() => {rows}.map(r => r.dataset.effect).filter(e => e !== '').map(Number)")
    assert effects == sorted(effects)
    page.close()
