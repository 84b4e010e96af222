"""Broken layouts measured in the page: text that overflows its container, and text laid out
one character per line (a column squeezed to nothing)."""

from __future__ import annotations

from playwright.sync_api import Page

# Block containers of text whose content is wider than they are, and text nodes of two or more
# characters of which two or more lines hold a single character each.
_PROBLEMS = """() => {
  const problems = [];
  const main = document.querySelector('main') || document.body;
  for (const box of main.querySelectorAll('p, dt, dd, li, td, th, h1, h2, h3, label, legend')) {
    if (box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1) {
      problems.push('overflows: ' + box.textContent.trim().slice(0, 80));
    }
  }
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.textContent.trim().length < 2) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const em = parseFloat(getComputedStyle(node.parentElement).fontSize);
    const narrow = [...range.getClientRects()].filter(r => r.width > 0 && r.width < 0.8 * em);
    if (narrow.length > 1) {
      problems.push('one character per line: ' + node.textContent.trim().slice(0, 80));
    }
  }
  return problems;
}"""


def layout_problems(page: Page) -> list[str]:
    """What overflows or stands one character per line in the page's main part."""
    return page.evaluate(_PROBLEMS)
