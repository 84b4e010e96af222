"""Broken layouts measured in the page: text that overflows its container, and text laid out
one character per line (a column squeezed to nothing)."""

from __future__ import annotations

from playwright.sync_api import Page

# Block containers of text whose content is wider than they are (not those hidden on purpose,
# clipped to a pixel for screen readers), and text of two or more characters of which two or
# more lines hold a single character each. Preformatted text (code samples) breaks its lines
# where its source does: each of its lines is measured on its own.
_PROBLEMS = """() => {
  const problems = [];
  const main = document.querySelector('main') || document.body;
  for (const box of main.querySelectorAll('p, dt, dd, li, td, th, h1, h2, h3, label, legend')) {
    if (box.clientWidth > 1 && box.scrollWidth > box.clientWidth + 1) {
      problems.push('overflows: ' + box.textContent.trim().slice(0, 80));
    }
  }
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const style = getComputedStyle(node.parentElement);
    const em = parseFloat(style.fontSize);
    const lines = /^pre/.test(style.whiteSpace) || style.whiteSpace === 'break-spaces'
      ? node.textContent.split('\\n') : [node.textContent];
    let start = 0;
    for (const line of lines) {
      if (line.trim().length >= 2) {
        range.setStart(node, start);
        range.setEnd(node, start + line.length);
        const narrow = [...range.getClientRects()].filter(r => r.width > 0 && r.width < 0.8 * em);
        if (narrow.length > 1) {
          problems.push('one character per line: ' + line.trim().slice(0, 80));
          break;
        }
      }
      start += line.length + 1;
    }
  }
  return problems;
}"""


def layout_problems(page: Page) -> list[str]:
    """What overflows or stands one character per line in the page's main part."""
    return page.evaluate(_PROBLEMS)
