// Copy buttons: <button data-copy-from="ID" hidden> copies the value of the field #ID (or the
// text of any other element #ID) and says so in [data-copy-status="ID"]; <button data-copy="TEXT"
// hidden> (a hash or an address) copies TEXT and says so in the element after it. The buttons
// stay hidden when JavaScript does not run. No inline scripts: the CSP forbids them.
(function () {
  "use strict";

  function reveal(root) {
    if (!root.querySelectorAll) return;
    root.querySelectorAll("button[data-copy-from], button[data-copy]").forEach(function (button) {
      button.hidden = false;
    });
  }

  function say(status, text) {
    if (status) status.textContent = text;
  }

  function selectAndCopy(source) {
    if (source.select) {
      source.select();
    } else {
      window.getSelection().selectAllChildren(source);
    }
    return Boolean(document.execCommand && document.execCommand("copy"));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy-from], button[data-copy]");
    if (!button) return;
    var source, status, text;
    if (button.hasAttribute("data-copy")) {
      source = button.previousElementSibling;
      status = button.nextElementSibling;
      text = button.getAttribute("data-copy");
    } else {
      var id = button.getAttribute("data-copy-from");
      source = document.getElementById(id);
      status = document.querySelector('[data-copy-status="' + id + '"]');
      if (!source) return;
      text = source.matches("input, textarea") ? source.value : source.textContent.trim();
    }
    var done = function () { say(status, "Copied."); };
    var failed = function () {
      say(status, selectAndCopy(source) ? "Copied." : "Selected: press Ctrl+C (or ⌘C) to copy.");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, failed);
    } else {
      failed();
    }
  });

  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  document.addEventListener("htmx:load", function (event) { reveal(event.detail.elt); });
})();
