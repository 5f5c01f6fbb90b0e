"""Every built page read as its readers read it: in headless Chromium (Debian's `chromium`, driven by Playwright) at
1,400×900 and 390×844, the main column never overflows outside a scroll container, every image the book ships loads
and the console logs no error; at 1,400 px nothing in the main content of the scorecard, the chapters and the
Efficiency page scrolls sideways either (code cells aside), and Houlsby's Table 1 fits one screen; the scorecard's
claim table shows its five columns without scrolling at 1,400 px.

The book is built offline, so requests that leave the machine (the Colab badge, Colab's and thebe's scripts) are
refused here and their failures are not the page's: a reader online fetches them."""

import os
import shutil
from pathlib import Path

import pytest

from adaptstudy.reporting.chapters import book_pages

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

# What a reader at 1,400 px would have to scroll sideways to see, code cells aside: a box (a cell's output, a table)
# whose content is wider than it and scrolls, or anything that runs out of the main column; each named by the heading
# above it and, for a table, its first column headings.
SCROLLS = """() => {
  const main = document.querySelector("article.bd-article");
  const edge = main.getBoundingClientRect();
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !el.closest("[hidden], details:not([open]) > :not(summary)");
  };
  const headings = [...main.querySelectorAll("h1, h2, h3, h4")];
  const under = (el) => {
    let last = null;
    for (const h of headings) if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) last = h;
    return last ? last.textContent.replace(/#$/, "").trim() : "(top)";
  };
  const what = (el) => {
    const table = el.matches("table") ? el : el.querySelector("table");
    if (!table) return `${el.tagName.toLowerCase()} «${el.textContent.trim().slice(0, 40)}»`;
    const heads = [...table.querySelectorAll("thead th")].map((c) => c.textContent.trim()).filter(Boolean);
    return `the table (${heads.slice(0, 4).join(" | ")}${heads.length > 4 ? " | …" : ""})`;
  };
  const out = [];
  for (const el of main.querySelectorAll("*")) {
    if (el.closest("div.cell_input") || !shown(el)) continue;
    if (["auto", "scroll"].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1) {
      out.push(`under "${under(el)}": ${what(el)} scrolls sideways (${el.scrollWidth} px in ${el.clientWidth} px)`);
      continue;
    }
    const r = el.getBoundingClientRect();
    if (r.right <= edge.right + 1 && r.left >= edge.left - 1) continue;
    let p = el.parentElement, inside = false;
    for (; p && p !== main && !inside; p = p.parentElement) inside = getComputedStyle(p).overflowX !== "visible";
    if (!inside) out.push(`under "${under(el)}": ${what(el)} runs out of the column (${Math.round(r.right)} px)`);
  }
  return out;
}"""

# Houlsby's Table 1 (every table with a column of Table 1's total: ours on minilm-l6, at base size, at 3 layers): each
# scrolled to just under the sticky header, its box within the 1,400 × 900 window.
TABLE_1 = """() => {
  const main = document.querySelector("article.bd-article");
  const tables = [...main.querySelectorAll("div.cell_output table")].filter((t) =>
    [...t.querySelectorAll("thead th")].some((c) => c.textContent.trim().startsWith("Table 1's total")));
  const header = document.querySelector(".bd-header-article").getBoundingClientRect().height;
  return tables.map((t) => {
    window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY - header - 4);
    const r = t.getBoundingClientRect();
    const box = t.closest("div.cell_output");
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, scrolls: box.scrollWidth > box.clientWidth + 1,
            columns: t.querySelectorAll("thead th").length};
  });
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


def _new_page(browser, width=1400, height=900):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    return page


def test_the_sideways_check_names_a_wide_table_and_leaves_code_cells_alone(browser, tmp_path):
    """The check at 1,400 px on a page of our own: a table wider than its output box scrolls there and is named by
    its heading and columns; a table that fits and a long line in a code cell are not reported."""
    wide = "".join(f"<th>column {i}</th>" for i in range(40))
    html = tmp_path / "page.html"
    html.write_text(
        "<html><body><article class='bd-article' style='width: 800px'><section><h2>Results</h2>"
        "<div class='cell'><div class='cell_input'><pre style='overflow-x: auto'>" + "x" * 400 + "</pre></div>"
        f"<div class='cell_output' style='overflow-x: auto'><table><thead><tr>{wide}</tr></thead></table></div>"
        "<div class='cell_output' style='overflow-x: auto'><table><thead><tr><th>a</th></tr></thead></table></div>"
        "</div></section></article></body></html>"
    )
    page = _new_page(browser)
    page.goto(html.as_uri())
    found = page.evaluate(SCROLLS)
    page.close()
    assert len(found) == 1 and found[0].startswith('under "Results": the table (column 0 | column 1 |'), found
    assert "scrolls sideways" in found[0]


@pytest.mark.slow
def test_at_1400_px_no_table_or_output_scrolls_sideways(built_book, browser):
    """The scorecard, the chapters and the Efficiency page (the book's notebook pages) as a reader sees them on a
    laptop: every table and output whole in the main column, code cells aside."""
    page = _new_page(browser)
    problems = []
    for name in book_pages():
        page.goto((built_book / "generated" / f"{name}.html").as_uri(), wait_until="load")
        problems += [f"{name}: {found}" for found in page.evaluate(SCROLLS)]
    page.close()
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_a_notebook_page_opens_its_contents_from_the_header_at_1400_px(built_book, browser):
    """The page's contents, which give their sidebar's width to the tables on a laptop screen, open from the article
    header's list button (book/_static/page-contents.js)."""
    page = _new_page(browser)
    page.goto((built_book / "generated" / "06_analysis_houlsby.html").as_uri(), wait_until="load")
    assert not page.locator("div.bd-sidebar-secondary").is_visible()
    page.locator(".bd-header-article button.secondary-toggle").click()
    page.wait_for_timeout(300)
    shown = page.evaluate(
        "() => [...document.querySelectorAll('#pst-secondary-sidebar-modal[open] nav a')]"
        ".filter((a) => a.getBoundingClientRect().width > 0).map((a) => a.textContent.trim())"
    )
    page.close()
    assert any(text.startswith("Table 1") for text in shown), shown


@pytest.mark.slow
def test_houlsbys_table_1_fits_one_screen_at_1400_px(built_book, browser):
    """Table 1, the chapter's reason to exist, on our backbone and at base size: all its columns and rows within one
    1,400 × 900 screen once scrolled to, without scrolling inside its box."""
    page = _new_page(browser)
    page.goto((built_book / "generated" / "06_analysis_houlsby.html").as_uri(), wait_until="load")
    tables = page.evaluate(TABLE_1)  # the page is left scrolled to the last of them
    page.screenshot(path=str(built_book.parent / "houlsby-table-1-1400.png"))  # kept beside the book, to look at
    page.close()
    assert len(tables) >= 3, tables
    for t in tables:
        assert t["left"] >= 0 and t["right"] <= 1400 and t["top"] >= 0 and t["bottom"] <= 900, t
        assert not t["scrolls"] and t["columns"] >= 7, t


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
